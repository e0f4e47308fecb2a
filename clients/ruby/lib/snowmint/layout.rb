# frozen_string_literal: true

require_relative "presets"

module Snowmint
  # How a 64-bit id is cut into fields: the timestamp on top, then datacenter, worker and
  # sequence in the layout's order, a tick length and an epoch. A preset is data, not code:
  # PRESETS (presets.rb) is generated from the core's testdata/vectors.json.
  class Layout
    # Twitter's epoch, 2010-11-04T01:42:54.657Z: the default epoch of a custom layout.
    TWITTER_EPOCH_MS = PRESETS.fetch("twitter").fetch(:epoch_ms)
    # The largest unsigned 64-bit value: the last millisecond a layout may reach.
    U64_MAX = (1 << 64) - 1
    # The largest id text is u64's 20 digits.
    MAX_DIGITS = U64_MAX.to_s.length

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
        # Plain digits only, as the core takes them: no sign, no space.
        unless width.match?(/\A[0-9]{1,3}\z/) && width.to_i <= 64
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

    # Takes +id+ apart: an Integer, or its text in +encoding+ as #read_id reads it. Raises
    # DecodeError for text that is no id, and for an id past the layout's largest (bits the
    # layout never sets).
    #
    #   Snowmint::Layout.named("discord").decode("175928847299117063").worker # => 1
    def decode(id, encoding: "decimal")
      value = id.is_a?(String) ? read_id(id, encoding: encoding) : Layout.parse_id(id)
      if value > max_id
        raise DecodeError, "id #{value} is out of range for this layout: its largest id is #{max_id}"
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

    # Reads id text in +encoding+, as Layout.parse_id does; and a negative decimal as an id
    # as a signed 64-bit column (SQL bigint, a Java long) holds it: for a layout of 64 bits,
    # the two's complement. A layout of 63 bits has no negative ids, so it refuses one.
    #
    #   Snowmint::Layout.named("instagram").read_id("-8499700661677131895") # => 9947043412032419721
    def read_id(text, encoding: "decimal")
      name = Layout.encoding_named(encoding)
      return Layout.parse_id(text, encoding: name) unless name == "decimal" && text.start_with?("-") && text != "-"

      magnitude = begin
        Layout.parse_id(text[1..])
      rescue DecodeError => e
        overflow = e.message == "decimal id does not fit in 64 bits"
        # Positions count the sign.
        raise DecodeError, e.message.sub(/ at position (\d+) /) { " at position #{Integer($1, 10) + 1} " } unless overflow

        U64_MAX
      end
      if magnitude > 1 << 63
        raise DecodeError, "id #{text.inspect} is below -9223372036854775808, the smallest signed 64-bit number"
      end
      if magnitude != 0 && max_id < U64_MAX
        layout = name_of_layout
        raise DecodeError, "id #{text.inspect} is negative, but layout #{layout} uses 63 bits: " \
                           "none of its ids is negative, even in a signed 64-bit column"
      end
      -magnitude % (1 << 64)
    end

    # The layout's name as the core's messages give it: "custom" for a custom layout.
    def name_of_layout
      name.start_with?(CUSTOM_PREFIX) ? "custom" : name
    end
    private :name_of_layout

    # The encoding a name stands for, in any case, as the core reads names.
    def self.encoding_named(name)
      found = ENCODING_NAMES[name.to_s.downcase]
      return found if found

      raise DecodeError, "unknown encoding #{name.to_s.inspect}: expected one of #{ENCODINGS.keys.join(", ")}"
    end

    # The unsigned 64-bit value of an Integer or a String in +encoding+ (decimal by
    # default; hex, base32, base62 or binary as the core writes and reads them, never
    # guessed). Raises DecodeError, with the core's message for text that is no id.
    #
    #   Snowmint::Layout.parse_id("175928847299117063") # => 175928847299117063
    #   Snowmint::Layout.parse_id("8000000000000", encoding: "base32") # => 9223372036854775808
    def self.parse_id(id, encoding: "decimal")
      case id
      when Integer
        raise DecodeError, "id #{id} is negative" if id.negative?
        raise DecodeError, "id #{id} does not fit in 64 bits" if id > U64_MAX

        id
      when String
        name = encoding_named(encoding)
        name == "decimal" ? parse_decimal(id) : parse_digits(id, name)
      else raise DecodeError, "an id is an Integer or its decimal String, got #{id.class}"
      end
    end

    def self.parse_decimal(text)
      raise DecodeError, "empty input: expected an id" if text.empty?

      text.each_char.with_index do |ch, position|
        next if ch.between?("0", "9")

        raise DecodeError, "invalid character #{quote_char(ch)} at position #{position} in decimal id"
      end
      if text.length > MAX_DIGITS
        raise DecodeError, "decimal id has #{text.length} characters, more than the #{MAX_DIGITS} a 64-bit id takes"
      end

      value = Integer(text, 10)
      raise DecodeError, "decimal id does not fit in 64 bits" if value > U64_MAX

      value
    end
    private_class_method :parse_decimal

    def self.parse_digits(text, name)
      alphabet, fold_case, prefixes, max_len, aliases = ENCODINGS.fetch(name)
      prefix = prefixes.find { |p| text.start_with?(p) } || ""
      digits = text[prefix.length..]
      raise DecodeError, "empty input: expected an id" if digits.empty?

      value = 0
      digits.each_char.with_index do |ch, position|
        digit = nil
        if ch.ascii_only?
          digit = fold_case ? alphabet.upcase.index(ch.upcase) : alphabet.index(ch)
          digit = aliases.fetch(ch.upcase, digit)
        end
        if digit.nil?
          raise DecodeError, "invalid character #{quote_char(ch)} at position #{prefix.length + position} in #{name} id"
        end

        value = (value * alphabet.length) + digit
      end
      if digits.length > max_len
        raise DecodeError, "#{name} id has #{digits.length} characters, more than the #{max_len} a 64-bit id takes"
      end
      raise DecodeError, "#{name} id does not fit in 64 bits" if value > U64_MAX

      value
    end
    private_class_method :parse_digits

    # Escapes as the core shows a character in single quotes.
    ESCAPES = { "'" => "\\'", "\\" => "\\\\", "\n" => "\\n", "\r" => "\\r", "\t" => "\\t", "\0" => "\\0" }.freeze

    # A character in single quotes, as the core's messages show one.
    def self.quote_char(ch)
      shown = ESCAPES.fetch(ch) { ch.match?(/[[:print:]]/) ? ch : format("\\u{%x}", ch.ord) }
      "'#{shown}'"
    end
    private_class_method :quote_char
    private_constant :ESCAPES

    class << self
      # Deprecated: the old name of Layout.parse_id, kept so that existing code runs.
      alias id_value parse_id
    end
  end
end
