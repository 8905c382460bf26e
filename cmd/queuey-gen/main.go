// Command queuey-gen generates typed Enqueue and Handle functions for the
// //queuey:queue annotated struct types of a Go package. Run it with
// -h for usage.
package main

import (
	"os"

	"github.com/queuey/queuey/cmd/queuey-gen/generator"
)

func main() { os.Exit(generator.Run(os.Args[1:], os.Stdout, os.Stderr)) }
