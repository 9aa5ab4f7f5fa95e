// Command perf is being written.
package main

func main() {}
