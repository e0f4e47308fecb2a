package snowmint_test

import (
	"context"
	"fmt"

	"snowmint"
)

func ExampleDecode() {
	d, err := snowmint.Decode(175928847299117063, "discord")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Time(), d.Worker, d.Sequence)
	// Output: 2016-04-30 11:18:25.796 +0000 UTC 1 7
}

func ExampleLayoutNamed() {
	l, err := snowmint.LayoutNamed("custom:39/0/10/14", snowmint.TickMs(10), snowmint.EpochMs(1577836800000))
	if err != nil {
		panic(err)
	}
	d, err := l.DecodeString("123456789012345")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.UnixMs, d.Worker, d.Sequence)
	// Output: 1577910385980 55 8057
}

func ExampleLayout_WithTickMs() {
	l, err := snowmint.LayoutNamed("custom:39/0/10/14")
	if err == nil {
		l, err = l.WithTickMs(10)
	}
	if err == nil {
		l, err = l.WithEpochMs(1577836800000)
	}
	if err != nil {
		panic(err)
	}
	d, err := l.DecodeString("123456789012345")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.UnixMs, d.Worker, d.Sequence)
	// Output: 1577910385980 55 8057
}

func ExampleClient() {
	client := &snowmint.Client{BaseURL: "http://127.0.0.1:8080", BatchSize: 1000}
	id, err := client.NextID(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id)
}
