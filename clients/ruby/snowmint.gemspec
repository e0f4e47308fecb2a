# frozen_string_literal: true

require_relative "lib/snowmint/version"

Gem::Specification.new do |spec|
  spec.name = "snowmint"
  spec.version = Snowmint::VERSION
  spec.summary = "Ids from a snowmint server, and decoding of Snowflake-style ids"
  spec.description = "A client for snowmint serve over HTTP, with a local buffer refilled " \
                     "in the background, and exact decoding of Twitter, Discord, Instagram, " \
                     "Sonyflake, Baidu, TSID, Mastodon and custom 64-bit id layouts."
  spec.authors = ["snowmint developers"]
  spec.licenses = ["MIT", "Apache-2.0"]
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir["lib/**/*.rb", "README.md"]
  spec.require_paths = ["lib"]

  spec.add_development_dependency "minitest", "~> 5.15"
  spec.add_development_dependency "rake", "~> 13"
end
