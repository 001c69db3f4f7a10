// Package fromasynq checks docs/from-asynq.md, the guide for porting from
// github.com/hibiken/asynq to redisq: each row of its tables has a test
// here, named after the row, that runs the asynq code and the redisq code
// of the row on the same redis-server and asserts what the row says, the
// same behaviour where it says so and the difference where it names one.
//
//	cd bench && go test -run TestFromAsynq ./fromasynq
//
// The tests start their own redis-server (redis-server must be on PATH).
package fromasynq
