# frozen_string_literal: true

require "json"
require "socket"
require "minitest/autorun"
require "snowmint"

module TestHelper
  # The running `snowmint serve --datacenter 1 --worker 7` the tests get ids from.
  def self.url
    ENV.fetch("SNOWMINT_URL") { raise "SNOWMINT_URL must name a running snowmint serve" }
  end

  def self.vectors
    @vectors ||= JSON.parse(File.read(ENV.fetch("SNOWMINT_VECTORS") do
      File.expand_path("../../../testdata/vectors.json", __dir__)
    end))
  end

  # A loopback listener that reads one request and answers it with +response+ (raw HTTP),
  # or never answers when +response+ is nil; yields its URL and returns the request's head.
  def self.one_request_server(response)
    server = TCPServer.new("127.0.0.1", 0)
    head = +""
    thread = Thread.new do
      socket = server.accept
      while (line = socket.gets) && line != "\r\n"
        head << line
      end
      if response
        socket.write(response)
        socket.close
      else
        # Holds the connection open, answering nothing, until the test is over.
        socket.read
      end
    end
    thread.report_on_exception = false
    yield "http://127.0.0.1:#{server.addr[1]}"
    head
  ensure
    server&.close
    thread&.kill&.join
  end
end
