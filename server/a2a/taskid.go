package a2a

import (
	"encoding/base64"
	"strconv"
	"strings"

	spec "github.com/a2aproject/a2a-go/v2/a2a"
)

// taskRef is what a task id names: the session (the task's contextId),
// the seq of its log the task's turn comes after, and the gateway's input
// the turn answers (its id and its seq in the store's inbox). It is all
// any server process needs to find the task again in the store, after a
// restart or on another replica: the task is derived from the input and
// the log (see deriveTasks), never stored as such.
type taskRef struct {
	session  string
	after    int64
	input    string
	inboxSeq int64
}

// taskPrefix starts every task id the adapter makes.
const taskPrefix = "task_"

func (ref taskRef) id() spec.TaskID {
	raw := ref.session + "\x00" + strconv.FormatInt(ref.after, 10) + "\x00" +
		strconv.FormatInt(ref.inboxSeq, 10) + "\x00" + ref.input
	return spec.TaskID(taskPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw)))
}

// parseTaskID reads a task id ref.id made; ok is false for any other
// string (a task of nobody's: not found).
func parseTaskID(id spec.TaskID) (ref taskRef, ok bool) {
	rest, ok := strings.CutPrefix(string(id), taskPrefix)
	if !ok {
		return taskRef{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return taskRef{}, false
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) != 4 || parts[0] == "" || parts[3] == "" {
		return taskRef{}, false
	}
	after, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || after < 0 || seq <= 0 {
		return taskRef{}, false
	}
	return taskRef{session: parts[0], after: after, inboxSeq: seq, input: parts[3]}, true
}
