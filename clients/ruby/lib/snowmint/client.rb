# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "uri"

module Snowmint
  # Ids from a running `snowmint serve`, over HTTP. Ids come from a local buffer filled
  # with `GET /v1/ids?count=batch_size`; when a call leaves fewer than +refill_below+ ids
  # in it, a background thread fetches the next batch, so callers rarely wait for the
  # network. Ids are Integers, exact, and increase from call to call. Safe to share
  # between threads; after a fork the child drops the parent's buffer, so the two never
  # hand out the same ids.
  #
  #   client = Snowmint::Client.new("http://127.0.0.1:8080")
  #   client.next_id      # => 2125143866305835008
  #   client.next_ids(3)  # => [2125143866305835009, ...]
  class Client
    # The server's default limit on ids per request (its max_batch).
    MAX_PER_REQUEST = 100_000

    attr_reader :base_url, :batch_size, :refill_below

    # +token+ is sent as `Authorization: Bearer TOKEN`; +timeout+ (seconds) bounds
    # connecting and each read. +refill_below+ defaults to a quarter of +batch_size+.
    #
    # For an https:// server, +ca_file+ is the PEM file of the CA that signs its
    # certificate (the system's CAs without it); +cert_file+ and +key_file+, together, the
    # PEM client certificate and key for a server started with --tls-client-ca.
    def initialize(base_url, token: nil, timeout: 5, batch_size: 1000, refill_below: nil,
                   ca_file: nil, cert_file: nil, key_file: nil)
      @base_url = base_url.to_s.chomp("/")
      unless %w[http https].include?(URI(@base_url).scheme) && URI(@base_url).host
        raise ArgumentError, "base url #{base_url.inspect} is not an http:// or https:// url"
      end
      @token = token
      @timeout = timeout
      @batch_size = positive(batch_size, "batch_size")
      @refill_below = refill_below.nil? ? [batch_size / 4, 1].max : refill_below
      unless @refill_below.is_a?(Integer) && @refill_below.between?(0, batch_size)
        raise ArgumentError, "refill_below #{refill_below.inspect} is out of range 0..=#{batch_size}"
      end

      @tls = tls_options(ca_file, cert_file, key_file)

      @lock = Mutex.new
      @refilled = ConditionVariable.new
      @buffer = []
      @refill = nil
      @requests = 0
      @pid = Process.pid
    end

    # One id.
    def next_id
      next_ids(1).first
    end

    # +count+ ids, increasing. Raises ServerError (with the status and the server's error
    # text) or ConnectionError when the buffer holds too few and the server fails.
    def next_ids(count)
      positive(count, "count")
      @lock.synchronize do
        forget_parents_buffer
        while @buffer.size < count
          if @refill
            @refilled.wait(@lock)
          else
            # Nothing on its way: fetch in this thread. Holding the lock keeps the buffer in
            # order; other callers would have to wait for these ids anyway.
            @requests += 1
            # A call for more than a batch asks for what it lacks, up to the server's default
            # limit per request.
            @buffer.concat(fetch([batch_size, [count - @buffer.size, MAX_PER_REQUEST].min].max))
          end
        end
        ids = @buffer.shift(count)
        start_refill if @buffer.size < refill_below && @refill.nil?
        ids
      end
    end

    # HTTP requests for ids made so far: the initial fill, refills and fetches.
    def requests
      @lock.synchronize { @requests }
    end

    # Ids held in the local buffer.
    def buffered
      @lock.synchronize { @buffer.size }
    end

    # Waits for a refill under way, if any, so that no thread outlives the client's use.
    def close
      refill = @lock.synchronize { @refill }
      refill&.join
      nil
    end

    private

    # Net::HTTP's TLS options, the files read now so that a bad one fails at once.
    def tls_options(ca_file, cert_file, key_file)
      raise ArgumentError, "cert_file and key_file go together: give both or neither" if cert_file.nil? != key_file.nil?

      options = { verify_mode: OpenSSL::SSL::VERIFY_PEER }
      if ca_file
        readable(ca_file, "ca_file")
        options[:ca_file] = ca_file
      end
      if cert_file
        options[:cert] = read_pem(cert_file, "cert_file") { |pem| OpenSSL::X509::Certificate.new(pem) }
        options[:key] = read_pem(key_file, "key_file") { |pem| OpenSSL::PKey.read(pem) }
      end
      options
    end

    def readable(path, what)
      File.read(path)
    rescue SystemCallError, IOError => e
      raise ArgumentError, "#{what} #{path.to_s.inspect}: cannot read it: #{e.message}"
    end

    def read_pem(path, what)
      yield readable(path, what)
    rescue OpenSSL::OpenSSLError => e
      raise ArgumentError, "#{what} #{path.to_s.inspect}: #{e.message}"
    end

    def positive(value, what)
      return value if value.is_a?(Integer) && value >= 1

      raise ArgumentError, "#{what} #{value.inspect} must be a whole number of at least 1"
    end

    # A forked child shares its parent's buffer: handing out those ids in both processes
    # would issue each twice.
    def forget_parents_buffer
      return if @pid == Process.pid

      @pid = Process.pid
      @buffer.clear
      @refill = nil
    end

    # Called with the lock held. A failed refill is dropped: the next call that finds the
    # buffer short fetches itself and raises the error then.
    def start_refill
      @requests += 1
      @refill = Thread.new do
        ids = fetch(batch_size)
      rescue Error
        ids = nil
      ensure
        @lock.synchronize do
          @buffer.concat(ids || [])
          @refill = nil
          @refilled.broadcast
        end
      end
      @refill.report_on_exception = false
    end

    def fetch(count)
      body = get("/v1/ids?count=#{count}")
      ids = body["ids"]
      unless ids.is_a?(Array) && ids.size == count
        raise Error, "#{base_url}/v1/ids?count=#{count} answered #{ids.inspect[0, 80]} instead of #{count} ids"
      end

      ids.map { |text| Layout.id_value(text) }
    rescue DecodeError => e
      raise Error, "#{base_url}/v1/ids?count=#{count} answered an id that is not one: #{e.message}"
    end

    def get(path)
      uri = URI("#{base_url}#{path}")
      request = Net::HTTP::Get.new(uri, "Accept" => "application/json")
      request["Authorization"] = "Bearer #{@token}" if @token
      response = Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == "https",
                                                     open_timeout: @timeout, read_timeout: @timeout,
                                                     write_timeout: @timeout, **@tls) do |http|
        http.request(request)
      end
      answer(uri, response)
    rescue SystemCallError, IOError, SocketError, Timeout::Error, Net::ProtocolError, OpenSSL::SSL::SSLError => e
      raise ConnectionError, "cannot get #{uri}: #{untrusted(e)}#{e.message} (#{e.class})"
    end

    # What a failed TLS check of the server's certificate says before its own words.
    def untrusted(error)
      return "" unless error.is_a?(OpenSSL::SSL::SSLError)
      return "" unless error.message.include?("certificate verify failed") || error.message.include?("does not match")

      "the server's certificate is not trusted: "
    end

    def answer(uri, response)
      body = begin
        JSON.parse(response.body.to_s)
      rescue JSON::ParserError
        nil
      end
      unless response.is_a?(Net::HTTPSuccess)
        detail = body.is_a?(Hash) && body["error"] ? body["error"] : response.body.to_s[0, 200]
        raise ServerError.new("#{uri} answered #{response.code} #{response.message}: #{detail}", response.code.to_i)
      end
      raise Error, "#{uri} answered with a body that is no JSON object" unless body.is_a?(Hash)

      body
    end
  end
end
