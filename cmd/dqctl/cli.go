package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dq-go/delayqueue/redisq"
	"github.com/redis/go-redis/v9"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitAborted  = 4
)

// exitErr carries an exit code with its message.
type exitErr struct {
	code int
	msg  string
}

func (e *exitErr) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &exitErr{exitUsage, fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &exitErr{exitNotFound, fmt.Sprintf(format, a...)}
}

// conn holds the connection flags shared by every command.
type conn struct {
	addr, user, password string
	db                   int
	tls, insecure        bool
	cluster              string
	timeout              time.Duration
	redisSet             bool // -redis was given (DQCTL_REDIS is a default, which -cluster overrides)

	mu        sync.Mutex
	handshake error // guarded by mu: the last TLS handshake's error, errHandshaking while under way
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "redis", envOr("DQCTL_REDIS", "127.0.0.1:6379"), "Redis `host:port` (env DQCTL_REDIS)")
	fs.StringVar(&c.user, "user", os.Getenv("DQCTL_USER"), "Redis ACL `user` (env DQCTL_USER)")
	fs.StringVar(&c.password, "password", os.Getenv("DQCTL_PASSWORD"), "Redis `password` (env DQCTL_PASSWORD, which keeps it out of ps)")
	fs.IntVar(&c.db, "db", 0, "Redis database `number` (not with -cluster)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS")
	fs.BoolVar(&c.insecure, "tls-insecure", false, "with -tls: do not verify the server's certificate")
	fs.StringVar(&c.cluster, "cluster", "", "Redis Cluster: comma-separated seed `addrs` (instead of -redis, not with it)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "time limit of the command's Redis work, after any confirmation; a slow reply is interrupted. "+
		"watch: per refresh; serve: per page; serve-metrics: per scrape (keep it under Prometheus' scrape_timeout, 10s by default)")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// where names the server for messages: "127.0.0.1:6379", "127.0.0.1:6379
// db 3", "cluster a:1,b:2".
func (c *conn) where() string {
	switch {
	case c.cluster != "":
		return "cluster " + c.cluster
	case c.db != 0:
		return fmt.Sprintf("%s db %d", c.addr, c.db)
	}
	return c.addr
}

// client connects and checks the server answers. Its commands honour
// their context's deadline (ContextTimeoutEnabled), so -timeout
// interrupts a reply that does not come.
func (c *conn) client(ctx context.Context) (redis.UniversalClient, error) {
	var tc *tls.Config
	if c.tls {
		tc = &tls.Config{InsecureSkipVerify: c.insecure, MinVersion: tls.VersionTLS12}
	}
	var cl redis.UniversalClient
	if c.cluster != "" {
		if c.db != 0 {
			return nil, usageErr("-db cannot be used with -cluster (Cluster has only database 0)")
		}
		if c.redisSet {
			return nil, usageErr("-redis cannot be used with -cluster: give every seed node to -cluster")
		}
		addrs := strings.Split(c.cluster, ",")
		cl = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Username: c.user, Password: c.password, TLSConfig: tc,
			Dialer: c.dial(tc), ContextTimeoutEnabled: true})
	} else {
		cl = redis.NewClient(&redis.Options{Addr: c.addr, Username: c.user, Password: c.password, DB: c.db, TLSConfig: tc,
			Dialer: c.dial(tc), ContextTimeoutEnabled: true})
	}
	limit := min(c.timeout, 5*time.Second)
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := cl.Ping(pctx).Err(); err != nil {
		if redis.IsPermissionError(err) && strings.Contains(err.Error(), "'ping'") {
			// The server answered, as this user's server should: one
			// that may not PING (dqproducer) may still run the command.
			return cl, nil
		}
		_ = cl.Close()
		return nil, c.pingErr(ctx, pctx, limit, err)
	}
	return cl, nil
}

// dial is go-redis' dialer, with the TLS handshake done here so that its
// failure can be told apart (go-redis reports only the deadline).
func (c *conn) dial(tc *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil || tc == nil {
			return raw, err
		}
		cfg := tc.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tconn := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c.setHandshake(errHandshaking)
		err = tconn.HandshakeContext(hctx)
		c.setHandshake(err)
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		return tconn, nil
	}
}

// errHandshaking: a TLS handshake is under way (go-redis may give up on
// the dial, at the deadline, before the handshake returns).
var errHandshaking = errors.New("the TLS handshake did not end")

func (c *conn) setHandshake(err error) {
	c.mu.Lock()
	c.handshake = err
	c.mu.Unlock()
}

// pingErr says why the first PING, under pctx (limit, within ctx),
// failed with err: the server's refusal (a wrong password, a bad -db),
// a server that does not speak TLS (with -tls), no answer in time, or no
// connection.
func (c *conn) pingErr(ctx, pctx context.Context, limit time.Duration, err error) error {
	c.mu.Lock()
	hs := c.handshake
	c.mu.Unlock()
	var rec tls.RecordHeaderError
	var said redis.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) && pctx.Err() != nil && ctx.Err() != context.Canceled
	switch {
	case errors.As(err, &said):
		return c.refusal(said)
	case hs != nil && (errors.As(hs, &rec) || strings.Contains(hs.Error(), "does not look like a TLS handshake")):
		return fmt.Errorf("Redis at %s did not speak TLS (its first reply is not a TLS record): connect without -tls, or to its TLS port (%v)", c.where(), hs)
	case hs != nil && timedOut:
		return fmt.Errorf("Redis at %s did not complete a TLS handshake within %v (-timeout %v): it may not speak TLS (connect without -tls, or to its TLS port)", c.where(), limit, c.timeout)
	case hs != nil:
		return fmt.Errorf("cannot reach Redis at %s: the TLS handshake failed: %w", c.where(), hs)
	case timedOut:
		return fmt.Errorf("Redis at %s did not answer within %v: timed out (-timeout %v)", c.where(), limit, c.timeout)
	}
	return fmt.Errorf("cannot reach Redis at %s: %w", c.where(), err)
}

// refusal says what a server that answered the connection with an error
// said, with what to change when the flags can be at fault.
func (c *conn) refusal(said redis.Error) error {
	hint := ""
	switch msg := said.Error(); {
	case redis.IsAuthError(said):
		hint = " (check -user and -password, or DQCTL_USER and DQCTL_PASSWORD)"
	case strings.Contains(msg, "DB index is out of range"):
		hint = fmt.Sprintf(" (-db %d: the server has fewer databases, its databases setting)", c.db)
	case redis.IsPermissionError(said):
		hint = " (the Redis user's ACL; docs/operations.md has the rules)"
	}
	return fmt.Errorf("Redis at %s refused the connection: %w%s", c.where(), said, hint)
}

// command is one subcommand.
type command struct {
	name, args, help string
	min, max         int                            // positional arguments (max -1: no limit)
	flags            func(fs *flag.FlagSet, e *env) // the command's own flags, into e
	run              func(e *env) error
	// serving: the command runs until interrupted and applies -timeout
	// to each refresh, page or scrape itself; others run under -timeout.
	serving bool
	// write: the command changes the queue (its messages say when
	// nothing changed).
	write bool
}

// env is what a command runs with.
type env struct {
	// ctx is the command's context: under -timeout, unless the command
	// is serving; base is ctx without the timeout.
	ctx, base context.Context
	cancel    context.CancelFunc
	cmd       *command
	conn      *conn
	c         redis.UniversalClient
	args      []string // positional arguments
	stdin     *bufio.Reader
	stdout    io.Writer
	stderr    io.Writer

	// Command flags.
	json       bool
	yes        bool
	all        bool
	full       bool // show everything, not what fits the terminal
	scan       bool // queues: SCAN for every queue, registered or not
	partitions bool // queues: list the partitions of partitioned queues
	// partitioned: the command's queue is partitioned (set by target).
	partitioned bool
	page        redisq.ListOptions
	cursor      string // list: a partitioned queue's page, "a,b,c"
	listen      string
	interval    time.Duration
	window      time.Duration
	count       int
	reg         registerOpts // register's flags
	release     bool         // unique: end the window

	// serve's and serve-metrics' flags.
	readOnly   bool
	basicAuth  string
	prefix     string
	title      string
	refresh    time.Duration
	queues     []string // serve: the queues the overview lists
	allowHosts []string
	scanKeys   int
	limitScan  int // serve-metrics: limit keys counted per kind, queue and scrape

	// The flags of the operator's views (queues -sort; list, requeue and
	// delete-dead -reason; reasons -limit; list -kind).
	sort        string
	reason      optString
	reasonLimit int64
	kind        optString
}

func (e *env) printf(format string, a ...any) { fmt.Fprintf(e.stdout, format, a...) }

// restartTimeout gives the command a new -timeout from now: after a
// confirmation, the time the operator took to answer does not count.
func (e *env) restartTimeout() {
	if e.cmd.serving {
		return
	}
	e.cancel()
	e.ctx, e.cancel = context.WithTimeout(e.base, e.conn.timeout)
}

// queue opens the ordinary queue named by args[0] and checks that it
// exists (commands that also take a partitioned queue use target).
func (e *env) queue() (*redisq.Queue, error) { return e.open(e.args[0]) }

// open opens the ordinary queue name and checks that it exists; a
// partitioned name gets an error that names its partitions.
func (e *env) open(name string) (*redisq.Queue, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	q, err := redisq.New(e.ctx, e.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
	if err != nil {
		if perr := e.partitionedErr(name); perr != nil {
			return nil, perr
		}
		return nil, e.legacyErr(name, err)
	}
	ok, err := q.Exists(e.ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		unchanged := ""
		if e.cmd.write {
			unchanged = "; nothing changed"
		}
		return nil, notFound("no queue named %s on %s%s (dqctl queues lists them)", quote(name), e.conn.where(), unchanged)
	}
	return q, nil
}

// legacyErr explains a refusal, by the Redis user's ACL, to open queue
// name (err, from redisq.New) when the queue is stored in the format of a
// redisq from before the sequence hash ({dq:NAME}:seq a string): New
// converts it, which takes a user that may write.
func (e *env) legacyErr(name string, err error) error {
	var pe *redisq.PermissionError
	if !errors.As(err, &pe) {
		return err
	}
	if typ, terr := e.c.Type(e.ctx, "{dq:"+name+"}:seq").Result(); terr != nil || typ != "string" {
		return err
	}
	return fmt.Errorf("queue %s is stored in the format of an older redisq, which opening it converts, and the Redis user may not do that (it may not run %s): "+
		"open it once as a producer or consumer (docs/operations.md): %w", quote(name), pe.Command, pe.Err)
}

// confirm asks the operator; -yes answers for them. The command's
// -timeout starts again once they have answered.
func (e *env) confirm(prompt, want string) error {
	if e.yes {
		return nil
	}
	defer e.restartTimeout()
	fmt.Fprint(e.stderr, prompt)
	line, err := e.stdin.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(e.stderr) // no answer (end of input): end the prompt's line
	}
	if strings.TrimSpace(line) == want || (want == "y" && strings.EqualFold(strings.TrimSpace(line), "yes")) {
		return nil
	}
	if err != nil && err != io.EOF {
		return err
	}
	return &exitErr{exitAborted, "aborted; nothing changed"}
}

const usageHead = `dqctl inspects and administers redisq queues.

Usage: dqctl [connection flags] COMMAND [flags] [arguments]
Flags may come before or after the arguments; an argument that starts
with "-" (an id such as -5) goes after "--".

Commands:
`

const usageTail = `
Connection flags (accepted before or after COMMAND):
%s
Exit codes: 0 ok, 1 error, 2 bad usage, 3 no such queue, item or
registration (or not in the state the command needs), 4 aborted.
Run dqctl help COMMAND (or dqctl COMMAND -h) for a command's flags.
`

// synopsis is the command with its flags and arguments:
// "list [-full] [-json] [-limit n] ... QUEUE STATE".
func (c *command) synopsis() string { return strings.Join(c.synopsisParts(), " ") }

func (c *command) synopsisParts() []string {
	parts := []string{c.name}
	if c.flags != nil {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs, &env{})
		fs.VisitAll(func(f *flag.Flag) {
			name, _ := flag.UnquoteUsage(f)
			if name == "" {
				parts = append(parts, "[-"+f.Name+"]")
			} else {
				parts = append(parts, "[-"+f.Name+" "+name+"]")
			}
		})
	}
	if c.args != "" {
		parts = append(parts, c.args)
	}
	return parts
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprint(w, usageHead)
	for i := range cmds {
		fmt.Fprint(w, wrap("  ", "        ", cmds[i].synopsisParts(), ""), wrap("      ", "      ", strings.Fields(cmds[i].help), ""))
	}
	var b strings.Builder
	fs := flag.NewFlagSet("dqctl", flag.ContinueOnError)
	fs.SetOutput(&b)
	new(conn).register(fs)
	fs.PrintDefaults()
	fmt.Fprintf(w, usageTail, b.String())
}

// commandUsage prints one command's usage and flags.
func commandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: dqctl %s\n  %s\n", c.synopsis(), c.help)
	if c.flags == nil {
		fmt.Fprintln(w, "\nNo flags but the connection flags (dqctl -h).")
		return
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(w)
	c.flags(fs, &env{})
	fmt.Fprintln(w, "\nFlags (the connection flags too, dqctl -h):")
	fs.PrintDefaults()
}

// parseArgs parses args with fs, flags and positional arguments in any
// order (the flag package stops at the first argument); everything after
// "--" is an argument.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// run runs dqctl with args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmds := commands()
	cn := &conn{}
	top := flag.NewFlagSet("dqctl", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	cn.register(top)
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, cmds)
			return exitOK
		}
		fmt.Fprintf(stderr, "dqctl: %s\n", clean(err.Error()))
		return exitUsage
	}
	if top.NArg() == 0 {
		usage(stderr, cmds)
		return exitUsage
	}
	name := top.Arg(0)
	find := func(name string) *command {
		if i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name }); i >= 0 {
			return &cmds[i]
		}
		return nil
	}
	if name == "help" {
		switch rest := top.Args()[1:]; {
		case len(rest) == 0:
			usage(stdout, cmds)
		case len(rest) == 1 && find(rest[0]) != nil:
			commandUsage(stdout, find(rest[0]))
		default:
			fmt.Fprintf(stderr, "dqctl help: unknown command %s (dqctl help lists them)\n", quote(strings.Join(rest, " ")))
			return exitUsage
		}
		return exitOK
	}
	cmd := find(name)
	if cmd == nil {
		fmt.Fprintf(stderr, "dqctl: unknown command %s (dqctl help lists them)\n", quote(name))
		return exitUsage
	}
	e := &env{base: ctx, cmd: cmd, conn: cn, stdin: bufio.NewReader(stdin), stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("dqctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The connection flags again, so they may follow COMMAND. Registering
	// resets the shared variables to their defaults: set again what was
	// given before COMMAND.
	given := map[string]string{}
	top.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	cn.register(fs)
	for k, v := range given {
		_ = fs.Set(k, v)
	}
	if cmd.flags != nil {
		cmd.flags(fs, e)
	}
	pos, err := parseArgs(fs, top.Args()[1:])
	fs.Visit(func(f *flag.Flag) { cn.redisSet = cn.redisSet || f.Name == "redis" })
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(stdout, cmd)
			return exitOK
		}
		msg := clean(err.Error())
		if strings.HasPrefix(msg, "flag provided but not defined") {
			msg += ` (an argument that starts with "-" goes after "--")`
		}
		fmt.Fprintf(stderr, "dqctl %s: %s\nusage: dqctl %s\n", cmd.name, msg, cmd.synopsis())
		return exitUsage
	}
	e.args = pos
	if cmd.serving {
		e.ctx, e.cancel = ctx, func() {}
	} else {
		e.ctx, e.cancel = context.WithTimeout(ctx, cn.timeout)
	}
	err = func() error {
		if len(e.args) < cmd.min || (cmd.max >= 0 && len(e.args) > cmd.max) {
			return usageErr("wrong number of arguments: %d given", len(e.args))
		}
		if cn.timeout <= 0 {
			return usageErr("-timeout must be positive")
		}
		c, err := cn.client(e.ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		e.c = c
		return cmd.run(e)
	}()
	timedOut := errors.Is(e.ctx.Err(), context.DeadlineExceeded)
	e.cancel()
	if err == nil {
		return exitOK
	}
	var ee *exitErr
	code := exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	err = e.explain(err)
	switch {
	case ctx.Err() != nil && code == exitError:
		err = fmt.Errorf("interrupted: %w", err)
	case code == exitError && !cmd.serving && timedOut && !strings.Contains(err.Error(), "-timeout"):
		err = fmt.Errorf("no answer within -timeout %v: %w", cn.timeout, err)
	}
	fmt.Fprintf(stderr, "dqctl %s: %s\n", cmd.name, clean(err.Error()))
	if code == exitUsage {
		fmt.Fprintf(stderr, "usage: dqctl %s\n", cmd.synopsis())
	}
	return code
}
