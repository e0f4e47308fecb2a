# frozen_string_literal: true

module Snowmint
  # How a 64-bit id is cut into fields: the timestamp on top, then datacenter, worker and
  # sequence in the layout's order, a tick length and an epoch. A preset is data, not code:
  # the numbers below are the ones testdata/vectors.json lists for each preset.
  class Layout
    # Twitter's epoch, 2010-11-04T01:42:54.657Z: the default epoch of a custom layout.
    TWITTER_EPOCH_MS = 1_288_834_974_657
    # The largest unsigned 64-bit value: the last millisecond a layout may reach.
    U64_MAX = (1 << 64) - 1
    # The largest id text is u64's 20 digits.
    MAX_DIGITS = U64_MAX.to_s.length

    PRESETS = {
      "twitter" => {
        bits: { timestamp: 41, datacenter: 5, worker: 5, sequence: 12 },
        order: %i[datacenter worker sequence], tick_ms: 1, epoch_ms: TWITTER_EPOCH_MS
      },
      "discord" => {
        bits: { timestamp: 42, datacenter: 5, worker: 5, sequence: 12 },
        order: %i[worker datacenter sequence], tick_ms: 1, epoch_ms: 1_420_070_400_000
      },
      "instagram" => {
        bits: { timestamp: 41, datacenter: 0, worker: 13, sequence: 10 },
        order: %i[datacenter worker sequence], tick_ms: 1, epoch_ms: 1_314_220_021_721
      },
      "sonyflake" => {
        bits: { timestamp: 39, datacenter: 0, worker: 16, sequence: 8 },
        order: %i[sequence datacenter worker], tick_ms: 10, epoch_ms: 1_409_529_600_000
      },
      "baidu" => {
        bits: { timestamp: 28, datacenter: 0, worker: 22, sequence: 13 },
        order: %i[datacenter worker sequence], tick_ms: 1000, epoch_ms: 1_463_702_400_000
      },
      "tsid" => {
        bits: { timestamp: 42, datacenter: 0, worker: 10, sequence: 12 },
        order: %i[datacenter worker sequence], tick_ms: 1, epoch_ms: 1_577_836_800_000
      },
      "mastodon" => {
        bits: { timestamp: 48, datacenter: 0, worker: 0, sequence: 16 },
        order: %i[datacenter worker sequence], tick_ms: 1, epoch_ms: 0
      }
    }.freeze

    CUSTOM_PREFIX = "custom:"
    CUSTOM_FIELDS = %i[timestamp datacenter worker sequence].freeze

    attr_reader :name, :bits, :order, :tick_ms, :epoch_ms, :max_id

    # The preset with this name (in any case), or a custom layout written custom:T/D/W/S:
    # timestamp, datacenter, worker and sequence widths, high to low, adding up to 63 or 64.
    # +tick_ms+ and +epoch_ms+ replace the preset's own; a custom layout has 1 ms ticks and
    # Twitter's epoch unless told otherwise.
    #
    #   Snowmint::Layout.named("custom:39/0/10/14", tick_ms: 10).max_id # => 9223372036854775807
    #
    # Raises LayoutError naming the problem.
    def self.named(name, tick_ms: nil, epoch_ms: nil)
      text = name.to_s
      preset = if text[0, CUSTOM_PREFIX.length].casecmp?(CUSTOM_PREFIX)
                 custom(text)
               else
                 PRESETS.fetch(text.downcase) { raise LayoutError, unknown(text) }
                   .merge(name: text.downcase)
               end
      new(**preset, tick_ms: tick_ms || preset[:tick_ms], epoch_ms: epoch_ms || preset[:epoch_ms])
    end

    def self.unknown(text)
      "unknown layout #{text.inspect}: expected one of #{PRESETS.keys.join(", ")} or custom:T/D/W/S"
    end
    private_class_method :unknown

    # The widths of custom:T/D/W/S, checked as the core checks them.
    def self.custom(text)
      parts = text[CUSTOM_PREFIX.length..].split("/", -1)
      unless parts.length == 4
        raise LayoutError, "custom layout #{text.inspect} must be custom:T/D/W/S, four bit widths " \
                           "(timestamp/datacenter/worker/sequence) such as custom:41/5/5/12"
      end
      bits = CUSTOM_FIELDS.zip(parts).to_h do |field, width|
        unless width.strip.match?(/\A\+?\d+\z/) && width.to_i <= 64
          raise LayoutError, "custom layout #{field} width #{width.inspect} is not a number of bits 0..=64"
        end
        [field, width.to_i]
      end
      total = bits.values.sum
      unless [63, 64].include?(total)
        raise LayoutError, "custom layout widths add up to #{total} bits: " \
                           "they must add up to 63 (bit 63 stays 0) or 64"
      end
      raise LayoutError, "layout needs at least 1 timestamp bit, got 0" if bits[:timestamp].zero?
      raise LayoutError, "custom layout needs at least 1 sequence bit, got 0" if bits[:sequence].zero?

      { name: text, bits: bits, order: %i[datacenter worker sequence], tick_ms: 1, epoch_ms: TWITTER_EPOCH_MS }
    end
    private_class_method :custom

    def initialize(name:, bits:, order:, tick_ms:, epoch_ms:)
      unless tick_ms.is_a?(Integer) && tick_ms >= 1
        raise LayoutError, "tick length must be at least 1 ms, got #{tick_ms.inspect}"
      end
      unless epoch_ms.is_a?(Integer) && epoch_ms.between?(0, U64_MAX)
        raise LayoutError, "epoch #{epoch_ms.inspect} ms is not a millisecond count 0..=#{U64_MAX}"
      end

      @name = name
      @bits = bits.dup.freeze
      @order = order.dup.freeze
      @tick_ms = tick_ms
      @epoch_ms = epoch_ms
      total = bits.values.sum
      @max_id = (1 << total) - 1
      last_ms = epoch_ms + ((1 << bits[:timestamp]) * tick_ms) - 1
      if last_ms > U64_MAX
        raise LayoutError, "epoch #{epoch_ms} ms puts the layout's last tick past the largest millisecond count"
      end

      freeze
    end

    # Takes +id+ apart: an Integer, or its decimal text. Raises DecodeError for text that is
    # no decimal id, and for an id past the layout's largest (bits the layout never sets).
    #
    #   Snowmint::Layout.named("discord").decode("175928847299117063").worker # => 1
    def decode(id)
      value = Layout.id_value(id)
      if value > max_id
        raise DecodeError, "id #{value} is out of range for layout #{name}: its largest id is #{max_id}"
      end

      shift = 0
      fields = order.reverse.to_h do |field|
        part = (value >> shift) & ((1 << bits[field]) - 1)
        shift += bits[field]
        [field, part]
      end
      timestamp = value >> shift
      Decoded.new(id: value, timestamp: timestamp, unix_ms: epoch_ms + (timestamp * tick_ms), **fields).freeze
    end

    # The unsigned 64-bit value of an Integer or a decimal String, with the core's messages.
    def self.id_value(id)
      case id
      when Integer
        raise DecodeError, "id #{id} is negative" if id.negative?
        raise DecodeError, "id #{id} does not fit in 64 bits" if id > U64_MAX

        id
      when String then parse_decimal(id)
      else raise DecodeError, "an id is an Integer or its decimal String, got #{id.class}"
      end
    end

    def self.parse_decimal(text)
      raise DecodeError, "empty input: expected an id" if text.empty?

      text.each_char.with_index do |ch, position|
        next if ch.between?("0", "9")

        shown = ch.match?(/[[:print:]]/) ? ch : ch.dump[1..-2]
        raise DecodeError, "invalid character '#{shown}' at position #{position} in decimal id"
      end
      if text.length > MAX_DIGITS
        raise DecodeError, "decimal id has #{text.length} characters, more than the #{MAX_DIGITS} a 64-bit id takes"
      end

      value = Integer(text, 10)
      raise DecodeError, "decimal id does not fit in 64 bits" if value > U64_MAX

      value
    end
    private_class_method :parse_decimal
  end
end
