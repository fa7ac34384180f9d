package main

func helper() {} // TODO: test me
