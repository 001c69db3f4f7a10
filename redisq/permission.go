package redisq

import "github.com/dq-go/delayqueue/redisq/internal/rdb"

// PermissionError is the error of a call that the Redis user (ACL) may not
// make: a command a script calls (Command, with the Script's line), or the
// queue's keys (Command empty). Err is Redis' own error, which names neither
// the command nor the keys. See docs/operations.md for the ACL rules each
// kind of process needs.
type PermissionError = rdb.PermissionError
