# frozen_string_literal: true

require_relative "test_helper"

# Every id of testdata/vectors.json decodes to exactly its fields, and the presets here are
# the layouts the vectors list.
class VectorsTest < Minitest::Test
  LAYOUTS = TestHelper.vectors.fetch("layouts").to_h { |l| [l["layout"], l] }

  def self.layout_for(spec)
    Snowmint::Layout.named(spec["layout"], tick_ms: Integer(spec["tick_ms"]),
                                           epoch_ms: Integer(spec["epoch_ms"]))
  end

  TestHelper.vectors.fetch("vectors").each_with_index do |v, i|
    define_method("test_vector_#{i}_#{v["layout"]}_#{v["id"]}") do
      layout = VectorsTest.layout_for(LAYOUTS.fetch(v["layout"]))
      [v["id"], Integer(v["id"], 10)].each do |id|
        d = layout.decode(id)
        assert_equal Integer(v["id"], 10), d.id
        %w[timestamp unix_ms datacenter worker sequence].each do |key|
          assert_equal Integer(v[key], 10), d.public_send(key), "#{key} of #{v["id"]} (#{v["layout"]})"
        end
      end
    end
  end

  def test_the_vectors_cover_every_preset_and_a_custom_layout
    assert_equal Snowmint::Layout::PRESETS.keys, LAYOUTS.keys.grep_v(/\Acustom:/)
    assert LAYOUTS.keys.any? { |name| name.start_with?("custom:") }
  end

  def test_each_layout_is_the_one_the_vectors_list
    LAYOUTS.each_value do |spec|
      layout = if spec["layout"].start_with?("custom:")
                 VectorsTest.layout_for(spec)
               else
                 Snowmint::Layout.named(spec["layout"])
               end
      assert_equal spec["bits"].transform_keys(&:to_sym), layout.bits, spec["layout"]
      assert_equal spec["order"].map(&:to_sym), layout.order, spec["layout"]
      assert_equal Integer(spec["tick_ms"]), layout.tick_ms, spec["layout"]
      assert_equal Integer(spec["epoch_ms"]), layout.epoch_ms, spec["layout"]
      assert_equal Integer(spec["max_id"]), layout.max_id, spec["layout"]
    end
  end

  def test_an_id_past_the_layout_is_refused_one_below_is_not
    spec = LAYOUTS.fetch("twitter")
    max = Integer(spec["max_id"])
    assert_equal 4095, Snowmint.decode(max).sequence
    error = assert_raises(Snowmint::DecodeError) { Snowmint.decode(max + 1) }
    assert_equal "id 9223372036854775808 is out of range for layout twitter: " \
                 "its largest id is 9223372036854775807", error.message
    assert_equal 65_535, Snowmint.decode((1 << 64) - 1, "discord").timestamp & 0xffff
  end
end

# Decoding's defaults, its time value and every error it names.
class DecodeTest < Minitest::Test
  def test_the_default_layout_is_twitter_and_time_is_utc
    d = Snowmint.decode(1_541_815_603_606_036_480)
    # What the server's GET /v1/decode/1541815603606036480 answers.
    assert_equal 1_656_432_460_105, d.unix_ms
    assert_equal "2022-06-28T16:07:40.105Z", d.time.iso8601(3)
    assert_equal [11, 26, 0], [d.datacenter, d.worker, d.sequence]
  end

  def test_names_are_case_insensitive_and_tick_and_epoch_replace_the_presets
    assert_equal Snowmint.decode("175928847299117063", "discord"), Snowmint.decode("175928847299117063", "DISCORD")
    d = Snowmint.decode(1 << 24, "sonyflake", tick_ms: 1, epoch_ms: 0)
    assert_equal [1, 1], [d.timestamp, d.unix_ms]
    custom = Snowmint.decode((5 << 24) | (3 << 14) | 9, "Custom:39/0/10/14")
    assert_equal [5, Snowmint::Layout::TWITTER_EPOCH_MS + 5, 3, 9],
                 [custom.timestamp, custom.unix_ms, custom.worker, custom.sequence]
  end

  def test_bad_id_text_is_named
    {
      "" => "empty input: expected an id",
      "hello" => "invalid character 'h' at position 0 in decimal id",
      "12 3" => "invalid character ' ' at position 2 in decimal id",
      "-1" => "invalid character '-' at position 0 in decimal id",
      "1\n" => "invalid character '\\n' at position 1 in decimal id",
      "12é" => "invalid character 'é' at position 2 in decimal id",
      "0" * 21 => "decimal id has 21 characters, more than the 20 a 64-bit id takes",
      "18446744073709551616" => "decimal id does not fit in 64 bits"
    }.each do |text, message|
      error = assert_raises(Snowmint::DecodeError, text.inspect) { Snowmint.decode(text, "mastodon") }
      assert_equal message, error.message
    end
    assert_equal (1 << 64) - 1, Snowmint.decode("18446744073709551615", "mastodon").id
    assert_equal 7, Snowmint.decode("0" * 19 + "7").sequence
  end

  def test_ids_that_are_no_u64_are_named
    assert_equal "id -1 is negative", assert_raises(Snowmint::DecodeError) { Snowmint.decode(-1) }.message
    assert_equal "id 18446744073709551616 does not fit in 64 bits",
                 assert_raises(Snowmint::DecodeError) { Snowmint.decode(1 << 64, "discord") }.message
    assert_equal "an id is an Integer or its decimal String, got Float",
                 assert_raises(Snowmint::DecodeError) { Snowmint.decode(1.0) }.message
  end

  def test_bad_layouts_are_named
    syntax = "must be custom:T/D/W/S, four bit widths (timestamp/datacenter/worker/sequence) such as custom:41/5/5/12"
    {
      "flickr" => "unknown layout \"flickr\": expected one of twitter, discord, instagram, sonyflake, " \
                  "baidu, tsid, mastodon or custom:T/D/W/S",
      "custom41/5/5/12" => "unknown layout \"custom41/5/5/12\": expected one of twitter, discord, " \
                           "instagram, sonyflake, baidu, tsid, mastodon or custom:T/D/W/S",
      "custom:41/5/5" => "custom layout \"custom:41/5/5\" #{syntax}",
      "custom:" => "custom layout \"custom:\" #{syntax}",
      "custom:41/5/5/12/1" => "custom layout \"custom:41/5/5/12/1\" #{syntax}",
      "custom:x/5/5/12" => "custom layout timestamp width \"x\" is not a number of bits 0..=64",
      "custom:41/-1/5/12" => "custom layout datacenter width \"-1\" is not a number of bits 0..=64",
      "custom:41/5/65/12" => "custom layout worker width \"65\" is not a number of bits 0..=64",
      "custom:41/5/5/" => "custom layout sequence width \"\" is not a number of bits 0..=64",
      "custom:41/5/5/11" => "custom layout widths add up to 62 bits: they must add up to 63 (bit 63 stays 0) or 64",
      "custom:43/5/5/12" => "custom layout widths add up to 65 bits: they must add up to 63 (bit 63 stays 0) or 64",
      "custom:0/31/20/12" => "layout needs at least 1 timestamp bit, got 0",
      "custom:41/11/11/0" => "custom layout needs at least 1 sequence bit, got 0"
    }.each do |name, message|
      error = assert_raises(Snowmint::LayoutError, name) { Snowmint.decode(1, name) }
      assert_equal message, error.message
    end
  end

  def test_bad_ticks_and_epochs_are_named
    assert_equal "tick length must be at least 1 ms, got 0",
                 assert_raises(Snowmint::LayoutError) { Snowmint.decode(1, tick_ms: 0) }.message
    assert_equal "epoch -1 ms is not a millisecond count 0..=18446744073709551615",
                 assert_raises(Snowmint::LayoutError) { Snowmint.decode(1, epoch_ms: -1) }.message
    assert_equal "epoch 18446744073709551615 ms puts the layout's last tick past the largest millisecond count",
                 assert_raises(Snowmint::LayoutError) { Snowmint.decode(1, epoch_ms: (1 << 64) - 1) }.message
  end
end
