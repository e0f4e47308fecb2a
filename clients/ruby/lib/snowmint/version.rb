# frozen_string_literal: true

module Snowmint
  VERSION = "0.1.0"
end
