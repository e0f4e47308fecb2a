# frozen_string_literal: true

require "timeout"
require_relative "test_helper"

# Ids from the real server at SNOWMINT_URL (datacenter 1, worker 7, layout twitter).
class ClientTest < Minitest::Test
  # Long enough for any loopback answer; a test that reaches it has hung.
  HANG_GUARD_S = 30

  def client(**options)
    (@clients ||= []) << Snowmint::Client.new(TestHelper.url, **options)
    @clients.last
  end

  def teardown
    @clients&.each(&:close)
  end

  def assert_ours(ids)
    assert(ids.all?(Integer), "ids are Integers")
    assert_equal ids.sort.uniq, ids, "ids are distinct and increasing"
    ids.each do |id|
      d = Snowmint.decode(id, "twitter")
      assert_equal [1, 7], [d.datacenter, d.worker], "id #{id} decodes to datacenter 1, worker 7"
    end
  end

  def test_one_id_then_a_batch_all_increasing_from_this_server
    c = client
    started = (Time.now.to_f * 1000).to_i
    ids = [c.next_id] + c.next_ids(500) + [c.next_id]
    assert_equal 502, ids.size
    assert_ours(ids)
    unix_ms = Snowmint.decode(ids.first).unix_ms
    assert_in_delta started, unix_ms, 60_000, "the id's time is now"
  end

  def test_a_batch_larger_than_the_buffer_comes_whole_and_in_order
    c = client(batch_size: 100)
    ids = c.next_ids(30) + c.next_ids(2_500) + c.next_ids(1)
    assert_equal 2_531, ids.size
    assert_ours(ids)
    huge = c.next_ids(100_001)
    assert_equal [100_001, huge.size], [huge.uniq.size, huge.sort.size]
    assert_equal huge.sort, huge
    assert_operator huge.first, :>, ids.last
  end

  def test_the_buffer_is_refilled_before_it_runs_dry
    c = client(batch_size: 10, refill_below: 4)
    first = c.next_ids(6)
    assert_equal [1, 4], [c.requests, c.buffered], "one fill; 4 left is not below 4"
    first << c.next_id
    assert_equal 2, c.requests, "3 left: the refill is under way while ids remain"
    c.close
    assert_equal 13, c.buffered, "the 3 left and the 10 of the refill"
    rest = c.next_ids(13)
    assert_equal 3, c.requests, "13 ids came from the buffer; taking them started the next refill"
    assert_ours(first + rest)
  end

  def test_a_failed_refill_leaves_the_ids_and_the_error_comes_when_the_buffer_is_short
    body = JSON.generate(ids: %w[1 2 3])
    answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" \
             "content-length: #{body.bytesize}\r\nconnection: close\r\n\r\n#{body}"
    c = nil
    # The listener answers one request with three ids and then stops listening: the
    # refill that follows fails.
    TestHelper.one_request_server(answer) do |url|
      c = Snowmint::Client.new(url, batch_size: 3, refill_below: 3, timeout: 1)
      assert_equal 1, c.next_id
    end
    c.close
    assert_equal [2, 2], [c.requests, c.buffered], "the refill failed, the ids stay"
    assert_equal [2, 3], c.next_ids(2)
    Timeout.timeout(HANG_GUARD_S) { assert_raises(Snowmint::ConnectionError) { c.next_id } }
  end

  def test_threads_sharing_a_client_get_distinct_increasing_ids
    c = client(batch_size: 50, refill_below: 20)
    per_thread = Array.new(4) { Thread.new { Array.new(300) { c.next_id } } }.map(&:value)
    per_thread.each { |ids| assert_equal ids.sort, ids }
    all = per_thread.flatten
    assert_equal 1_200, all.uniq.size
    assert_ours(all.sort)
  end

  def test_a_forked_child_does_not_reuse_the_parents_buffer
    c = client(batch_size: 100)
    c.next_id
    c.close
    reader, writer = IO.pipe
    child = fork do
      reader.close
      writer.puts(c.next_id)
      writer.close
      exit!(0)
    end
    writer.close
    parent_next = c.next_id
    child_id = Integer(reader.read)
    Process.wait(child)
    assert_operator child_id, :>, parent_next, "the child fetched its own ids"
  end

  def test_a_refused_batch_names_the_status_and_the_servers_text
    error = assert_raises(Snowmint::ServerError) { client(batch_size: 100_001).next_id }
    assert_equal 400, error.status
    assert_equal "#{TestHelper.url}/v1/ids?count=100001 answered 400 Bad Request: " \
                 "count \"100001\" is out of range: expected a whole number 1..=100000", error.message
    assert_raises(Snowmint::ServerError) { Snowmint::Client.new("#{TestHelper.url}/nope").next_id }
  end

  def test_an_unreachable_server_is_a_connection_error
    port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    error = Timeout.timeout(HANG_GUARD_S) do
      assert_raises(Snowmint::ConnectionError) { Snowmint::Client.new("http://127.0.0.1:#{port}").next_id }
    end
    assert_match(/\Acannot get http:\/\/127\.0\.0\.1:#{port}\/v1\/ids\?count=1000: .*refused/, error.message)
  end

  def test_a_server_that_never_answers_times_out
    TestHelper.one_request_server(nil) do |url|
      error = Timeout.timeout(HANG_GUARD_S) do
        assert_raises(Snowmint::ConnectionError) { Snowmint::Client.new(url, timeout: 0.2).next_id }
      end
      assert_match(/\Acannot get #{url}\/v1\/ids\?count=1000: .* \(Net::ReadTimeout\)\z/, error.message)
    end
  end

  def test_the_token_is_sent_and_a_refusal_carries_the_servers_text
    text = "missing or wrong bearer token: send `Authorization: Bearer <token>`"
    body = JSON.generate(error: text)
    answer = "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n" \
             "content-length: #{body.bytesize}\r\nconnection: close\r\n\r\n#{body}"
    error = nil
    head = TestHelper.one_request_server(answer) do |url|
      error = assert_raises(Snowmint::ServerError) { Snowmint::Client.new(url, token: "wrong").next_ids(2) }
    end
    assert_includes head.lines.map(&:downcase), "authorization: bearer wrong\r\n"
    assert_equal 401, error.status
    assert_match(/answered 401 Unauthorized: #{Regexp.escape(text)}\z/, error.message)
  end

  def test_bad_arguments_are_named
    {
      -> { Snowmint::Client.new("ftp://127.0.0.1") } => 'base url "ftp://127.0.0.1" is not an http:// or https:// url',
      -> { Snowmint::Client.new(TestHelper.url, batch_size: 0) } => "batch_size 0 must be a whole number of at least 1",
      -> { Snowmint::Client.new(TestHelper.url, batch_size: 10, refill_below: 11) } =>
        "refill_below 11 is out of range 0..=10",
      -> { client.next_ids(0) } => "count 0 must be a whole number of at least 1"
    }.each do |call, message|
      assert_equal message, assert_raises(ArgumentError, &call).message
    end
  end
end
