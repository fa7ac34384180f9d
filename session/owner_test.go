package session

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHeldErrorNamesTheHolder(t *testing.T) {
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli()
	err := error(&HeldError{ID: "s1", Holder: Holder{PID: 42, Host: "box", Since: since}})
	require.EqualError(t, err, `session "s1" is open in another process (pid 42 on host box since 2026-01-02T15:04:05Z)`)
	require.True(t, errors.Is(err, ErrHeld))
	require.EqualError(t, &HeldError{ID: "s2"}, `session "s2" is open in another process`, "a holder that recorded nothing")
	require.Equal(t, "pid 7", Holder{PID: 7}.String())
}
