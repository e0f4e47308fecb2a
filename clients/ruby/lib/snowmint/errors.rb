# frozen_string_literal: true

module Snowmint
  # Every error this library raises on purpose.
  class Error < StandardError; end

  # An id that cannot be read, or that does not fit the layout it is decoded with.
  class DecodeError < Error; end

  # A layout name that is no preset and no valid custom:T/D/W/S, or a bad tick or epoch.
  class LayoutError < Error; end

  # The server answered with an error status; +status+ is the HTTP status and the message
  # carries the server's own error text.
  class ServerError < Error
    attr_reader :status

    def initialize(message, status)
      super(message)
      @status = status
    end
  end

  # The server could not be reached, or did not answer within the timeout.
  class ConnectionError < Error; end
end
