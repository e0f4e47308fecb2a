# frozen_string_literal: true

require_relative "snowmint/version"
require_relative "snowmint/errors"
require_relative "snowmint/decoded"
require_relative "snowmint/layout"
require_relative "snowmint/client"

# Ids from a snowmint server, and the decoding of any id with a preset or custom layout.
module Snowmint
  # Takes +id+ (an Integer or its decimal text) apart with +layout+: a preset name or
  # custom:T/D/W/S, with +tick_ms+ and +epoch_ms+ replacing the layout's own.
  #
  #   d = Snowmint.decode("175928847299117063", "discord")
  #   [d.unix_ms, d.datacenter, d.worker, d.sequence] # => [1462015105796, 0, 1, 7]
  def self.decode(id, layout = "twitter", tick_ms: nil, epoch_ms: nil, encoding: "decimal")
    Layout.named(layout, tick_ms: tick_ms, epoch_ms: epoch_ms).decode(id, encoding: encoding)
  end

  # The unsigned 64-bit value of an Integer or a decimal String, as Layout.parse_id.
  #
  #   Snowmint.parse_id("175928847299117063") # => 175928847299117063
  def self.parse_id(id, encoding: "decimal")
    Layout.parse_id(id, encoding: encoding)
  end
end
