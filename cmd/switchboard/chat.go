package main

var chatCommand = &command{name: "chat", summary: "talk from the terminal, interactively", args: true}
var convCommand = &command{name: "conv", summary: "group conversations", args: true}
