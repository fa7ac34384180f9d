package session

// LastTurn returns the number of the last turn/start in events (0 if none).
func LastTurn(events []Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeTurnStart {
			var ts TurnStart
			if events[i].Decode(&ts) == nil {
				return ts.Turn
			}
		}
	}
	return 0
}

// TurnOpen reports whether the last of turn/start and turn/end in events is
// a turn/start.
func TurnOpen(events []Event) bool {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case TypeTurnStart:
			return true
		case TypeTurnEnd:
			return false
		}
	}
	return false
}

// HasHeader reports whether events contain a request header event.
func HasHeader(events []Event) bool {
	for _, e := range events {
		if e.Type == TypeRequestHeader || e.Type == TypeRequestHeaderDelta {
			return true
		}
	}
	return false
}

// CallRef returns the turn and step of the logged tool call callID (the
// latest with that id), or 0, 0 when events have none.
func CallRef(events []Event, callID string) (turn, step int) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeToolCall {
			continue
		}
		var tc ToolCall
		if events[i].Decode(&tc) == nil && tc.CallID == callID {
			return tc.Turn, tc.Step
		}
	}
	return 0, 0
}

// LastTurn is LastTurn(l.Events()) in O(1).
func (l *Log) LastTurn() int {
	e, ok := l.Last(TypeTurnStart)
	if !ok {
		return 0
	}
	var ts TurnStart
	if e.Decode(&ts) != nil {
		return LastTurn(l.Events())
	}
	return ts.Turn
}

// TurnOpen is TurnOpen(l.Events()) in O(1).
func (l *Log) TurnOpen() bool {
	return l.LastSeq(TypeTurnStart) > l.LastSeq(TypeTurnEnd)
}
