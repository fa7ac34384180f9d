package session

// TypeToolProgress is a running tool call's progress (the default
// composition only; never in upstream's wire): the card content to show
// while the call runs, replacing the previous progress of the same call.
// The final tool/result supersedes it.
const TypeToolProgress = "tool/progress"

// ToolProgress is the data of tool/progress.
type ToolProgress struct {
	Turn   int    `json:"turn"`
	Step   int    `json:"step"`
	CallID string `json:"callId"`
	// Content is the whole card content for now (text blocks).
	Content []Block `json:"content"`
}
