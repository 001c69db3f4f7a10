package rdb

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// PermissionError is the error of a call that the Redis user (ACL) may not
// make: a command a script calls (Command, with the Script's line), or the
// queue's keys (Command empty). Err is Redis' own error, which names neither
// the command nor the keys. redisq exports it as redisq.PermissionError.
type PermissionError struct {
	Queue   string
	Command string // the command refused, e.g. "TIME" (or "ZCARD or ZCOUNT" when the line calls both); empty for keys
	Line    int    // the line of the script that called it
	Err     error
}

func (e *PermissionError) Error() string {
	if e.Command == "" {
		return fmt.Sprintf("redisq: the Redis user may not use the keys of queue %q ({dq:%s}:*): allow ~{dq:*}:* "+
			"(read-only %%R~ patterns do not work with scripts): %v", e.Queue, e.Queue, e.Err)
	}
	allow := "+" + strings.ToLower(strings.ReplaceAll(e.Command, " or ", " +"))
	return fmt.Sprintf("redisq: the Redis user may not run %s, which redisq's scripts call (line %d of the script); "+
		"allow it (ACL SETUSER ... %s; see docs/operations.md): %v", e.Command, e.Line, allow, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

var (
	// Redis 7: "ERR The user executing the script can't run this command or
	// subcommand script: SHA1, on @user_script:LINE."
	scriptRefused = regexp.MustCompile(`can't run this command or subcommand script: ([0-9a-f]{40}), on @user_script:(\d+)`)
	luaCall       = regexp.MustCompile(`redis\.p?call\('([A-Za-z]+)'`)
)

// permissionError turns Redis' refusal of a script's command or of the
// queue's keys into a PermissionError that names what is missing; any other
// error is returned as it is.
func (r *Runner) permissionError(err error) error {
	return PermissionErr(r.Keys.Name, err)
}

// PermissionErr is Runner.permissionError for a call made outside a
// Runner, on the keys of queue name.
func PermissionErr(name string, err error) error {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	if strings.HasPrefix(msg, "NOPERM") && strings.Contains(msg, "keys") {
		return &PermissionError{Queue: name, Err: err}
	}
	m := scriptRefused.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	s, line := bySHA[m[1]], 0
	line, _ = strconv.Atoi(m[2])
	if s == nil {
		return err
	}
	lines := strings.Split(s.src, "\n")
	if line < 1 || line > len(lines) {
		return err
	}
	var cmds []string // a line may call more than one
	for _, c := range luaCall.FindAllStringSubmatch(lines[line-1], -1) {
		if c := strings.ToUpper(c[1]); !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		return err
	}
	return &PermissionError{Queue: name, Command: strings.Join(cmds, " or "), Line: line, Err: err}
}
