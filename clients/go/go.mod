module snowmint

go 1.19
