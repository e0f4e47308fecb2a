# frozen_string_literal: true

require "open3"
require_relative "test_helper"

# snippet.rb, the program the page shows, runs against the server and prints a decoded id.
class SnippetTest < Minitest::Test
  SNIPPET = File.expand_path("../snippet.rb", __dir__)

  def test_the_snippet_prints_an_id_of_this_server_decoded
    out, err, status = Open3.capture3({ "SNOWMINT_URL" => TestHelper.url },
                                      RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), SNIPPET)
    assert status.success?, err
    match = /\A(\d+) (\S+) datacenter=1 worker=7 sequence=(\d+)\n\z/.match(out)
    assert match, out
    d = Snowmint.decode(match[1])
    assert_equal [d.time.iso8601(3), d.sequence], [match[2], Integer(match[3])]
  end

  def test_the_snippet_names_its_layout_once_for_the_page_to_replace
    assert_equal 1, File.read(SNIPPET).scan('"twitter"').size
  end
end
