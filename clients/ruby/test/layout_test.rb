# frozen_string_literal: true

require_relative "test_helper"

# testdata/vectors.json, written by the core: every id decodes to exactly its fields, the
# presets here are the layouts the vectors list, every documented id decodes as its source
# says, and every bad input is refused in the core's words.
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
    max = Integer(LAYOUTS.fetch("twitter")["max_id"])
    assert_equal 4095, Snowmint.decode(max).sequence
    assert_raises(Snowmint::DecodeError) { Snowmint.decode(max + 1) }
    assert_equal 65_535, Snowmint.decode((1 << 64) - 1, "discord").timestamp & 0xffff
  end

  TestHelper.vectors.fetch("documented").each_with_index do |d, i|
    define_method("test_documented_#{i}_#{d["layout"]}_#{d["id"]}") do
      tick_ms = d["tick_ms"] && Integer(d["tick_ms"])
      epoch_ms = d["epoch_ms"] && Integer(d["epoch_ms"])
      parts = Snowmint.decode(d["id"], d["layout"], tick_ms: tick_ms, epoch_ms: epoch_ms)
      assert_equal d["time"], parts.time.iso8601(3).sub("+00:00", "Z"), d["source"]
      %w[timestamp unix_ms datacenter worker sequence].each do |key|
        assert_equal Integer(d[key], 10), parts.public_send(key), "#{key}: #{d["source"]}"
      end
    end
  end

  TestHelper.vectors.fetch("texts").each_with_index do |t, i|
    define_method("test_text_#{i}_#{t["layout"]}") do
      layout = VectorsTest.layout_for(LAYOUTS.fetch(t["layout"]))
      encoding = t.fetch("encoding", "decimal")
      assert_equal Integer(t["id"], 10), layout.read_id(t["text"], encoding: encoding), t.inspect
      assert_equal layout.decode(Integer(t["id"], 10)), layout.decode(t["text"], encoding: encoding), t.inspect
    end
  end

  TestHelper.vectors.fetch("errors").each_with_index do |e, i|
    define_method("test_error_#{i}_#{e["what"]}") do
      error = case e["what"]
              when "parse" then assert_raises(Snowmint::DecodeError) { Snowmint.parse_id(e["id"]) }
              when "decode" then assert_raises(Snowmint::DecodeError) { Snowmint.decode(e["id"], e["layout"]) }
              when "read"
                layout = VectorsTest.layout_for(LAYOUTS.fetch(e["layout"]))
                assert_raises(Snowmint::DecodeError) { layout.read_id(e["id"], encoding: e.fetch("encoding", "decimal")) }
              else
                assert_raises(Snowmint::LayoutError) do
                  Snowmint::Layout.named(e["layout"], tick_ms: e["tick_ms"] && Integer(e["tick_ms"]),
                                                      epoch_ms: e["epoch_ms"] && Integer(e["epoch_ms"]))
                end
              end
      assert_equal e["message"], error.message, e.inspect
    end
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
    assert_equal Snowmint.decode("2125144477650808832", "discord"), Snowmint.decode("2125144477650808832", "DISCORD")
    d = Snowmint.decode(1 << 24, "sonyflake", tick_ms: 1, epoch_ms: 0)
    assert_equal [1, 1], [d.timestamp, d.unix_ms]
    custom = Snowmint.decode((5 << 24) | (3 << 14) | 9, "Custom:39/0/10/14")
    assert_equal [5, Snowmint::Layout::TWITTER_EPOCH_MS + 5, 3, 9],
                 [custom.timestamp, custom.unix_ms, custom.worker, custom.sequence]
  end

  # Bad id text, ids past their layout and bad layouts are in the shared vectors, with the
  # core's words: VectorsTest.

  def test_leading_zeros_are_read_and_the_largest_id_decodes
    assert_equal (1 << 64) - 1, Snowmint.decode("18446744073709551615", "mastodon").id
    assert_equal 7, Snowmint.decode("#{"0" * 19}7").sequence
  end

  def test_the_old_name_of_parse_id_still_reads_an_id
    assert_equal 12, Snowmint::Layout.id_value("12")
    assert_equal 12, Snowmint.parse_id(12)
  end

  def test_ids_that_are_no_u64_are_named
    assert_equal "id -1 is negative", assert_raises(Snowmint::DecodeError) { Snowmint.decode(-1) }.message
    assert_equal "id 18446744073709551616 does not fit in 64 bits",
                 assert_raises(Snowmint::DecodeError) { Snowmint.decode(1 << 64, "discord") }.message
    assert_equal "an id is an Integer or its decimal String, got Float",
                 assert_raises(Snowmint::DecodeError) { Snowmint.decode(1.0) }.message
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
