require "snowmint"

client = Snowmint::Client.new(ENV.fetch("SNOWMINT_URL", "http://127.0.0.1:8080"))
id = client.next_id
parts = Snowmint.decode(id, "twitter")
puts "#{id} #{parts.time.iso8601(3)} datacenter=#{parts.datacenter} worker=#{parts.worker} sequence=#{parts.sequence}"
