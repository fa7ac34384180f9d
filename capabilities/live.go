package capabilities

// Live updates the card of a running tool call ephemerally: nothing it
// shows is logged, so a loaded session shows the call's result only. A
// tool stops calling Show for a call before the call returns its result.
type Live interface {
	// Show replaces what the running call's card shows with v.
	Show(callID string, v LiveView)
}

// LiveView is what a running call's card shows.
type LiveView struct {
	// Description is the call's description, shown first ("" for none).
	Description string
	// TerminalID embeds a host terminal the call runs in ("" for none);
	// the output fields are then unused (the host shows the terminal).
	TerminalID string
	// Output is the end of the output so far (stdout and stderr in
	// arrival order, cut at whole UTF-8 sequences), and Offset the byte
	// offset of its first byte in the whole output: the bytes before it
	// are no longer kept.
	Output string
	Offset int64
}
