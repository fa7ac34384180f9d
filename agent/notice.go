package agent

// TypeModelNotice is a log-only event: a notice the model provider had for
// the user during a step ({turn, step, text}), such as a retry after a
// rate limit. The editor shows it as a thought; the model never sees it.
const TypeModelNotice = "model/notice"

// ModelNotice is the data of model/notice.
type ModelNotice struct {
	Turn int    `json:"turn"`
	Step int    `json:"step"`
	Text string `json:"text"`
}
