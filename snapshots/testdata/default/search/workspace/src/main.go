package main

// TODO: handle errors
func main() {}
