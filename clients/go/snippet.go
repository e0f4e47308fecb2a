//go:build ignore

package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"snowmint"
)

func main() {
	url := os.Getenv("SNOWMINT_URL")
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	client := &snowmint.Client{BaseURL: url}
	id, err := client.NextID(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fields, err := snowmint.Decode(id, "twitter")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fields)
}
