# frozen_string_literal: true

require "tmpdir"
require_relative "test_helper"

# Ids over TLS from the real server at SNOWMINT_TLS_URL (`snowmint serve --tls-cert ...
# --tls-key ... --tls-client-ca ...`, datacenter 1, worker 7), whose CA is SNOWMINT_CA and
# which takes the client certificate SNOWMINT_CLIENT_CERT with its key SNOWMINT_CLIENT_KEY.
class TlsTest < Minitest::Test
  def tls_url
    ENV.fetch("SNOWMINT_TLS_URL") { raise "SNOWMINT_TLS_URL must name a running snowmint serve over TLS" }
  end

  def ca
    ENV.fetch("SNOWMINT_CA") { raise "SNOWMINT_CA must name the PEM file of the TLS server's CA" }
  end

  def client_pair
    [ENV.fetch("SNOWMINT_CLIENT_CERT"), ENV.fetch("SNOWMINT_CLIENT_KEY")]
  end

  def test_ids_come_over_https_from_a_server_the_ca_file_vouches_for
    cert, key = client_pair
    client = Snowmint::Client.new(tls_url, ca_file: ca, cert_file: cert, key_file: key, batch_size: 10)
    ids = [client.next_id] + client.next_ids(20)
    client.close
    assert_equal ids.sort.uniq, ids, "ids are distinct and increasing"
    d = Snowmint.decode(ids.first, "twitter")
    assert_equal [1, 7], [d.datacenter, d.worker]
  end

  def test_without_the_ca_file_the_servers_certificate_is_not_trusted
    error = assert_raises(Snowmint::ConnectionError) { Snowmint::Client.new(tls_url).next_id }
    assert error.message.start_with?("cannot get #{tls_url}/v1/ids?count=1000: the server's certificate is not trusted: "),
           error.message
    assert_includes error.message, "certificate verify failed"
  end

  def test_without_a_client_certificate_the_server_refuses
    error = assert_raises(Snowmint::ConnectionError) { Snowmint::Client.new(tls_url, ca_file: ca).next_id }
    assert error.message.start_with?("cannot get #{tls_url}/v1/ids?count=1000: "), error.message
  end

  def test_a_ca_file_that_cannot_be_read_is_named
    error = assert_raises(ArgumentError) do
      Snowmint::Client.new("https://localhost:8443", ca_file: "/nonexistent/ca.pem")
    end
    assert_equal 'ca_file "/nonexistent/ca.pem": cannot read it: No such file or directory @ rb_sysopen - /nonexistent/ca.pem',
                 error.message
  end

  def test_a_client_certificate_that_is_none_is_named
    Dir.mktmpdir do |dir|
      empty = File.join(dir, "empty.pem")
      File.write(empty, "nothing here\n")
      error = assert_raises(ArgumentError) do
        Snowmint::Client.new("https://localhost:8443", cert_file: empty, key_file: empty)
      end
      assert error.message.start_with?("cert_file #{empty.inspect}: "), error.message
    end
  end

  def test_a_certificate_without_its_key_is_refused
    error = assert_raises(ArgumentError) do
      Snowmint::Client.new("https://localhost:8443", cert_file: "/etc/client.pem")
    end
    assert_equal "cert_file and key_file go together: give both or neither", error.message
  end
end
