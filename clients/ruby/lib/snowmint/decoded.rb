# frozen_string_literal: true

require "time"

module Snowmint
  # An id taken apart. +unix_ms+ is the start of the id's tick in milliseconds since the
  # Unix epoch; #time is the same instant as a UTC Time
  # (+time.iso8601(3)+ writes it as RFC 3339). Every value is an exact Integer.
  Decoded = Struct.new(:id, :timestamp, :unix_ms, :datacenter, :worker, :sequence,
                       keyword_init: true) do
    # The id's time as a UTC Time, to the millisecond.
    def time
      Time.at(unix_ms / 1000, unix_ms % 1000, :millisecond, in: "UTC")
    end
  end
end
