package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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
}

func (c *conn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "redis", envOr("DQCTL_REDIS", "127.0.0.1:6379"), "Redis `host:port` (env DQCTL_REDIS)")
	fs.StringVar(&c.user, "user", os.Getenv("DQCTL_USER"), "Redis ACL `user` (env DQCTL_USER)")
	fs.StringVar(&c.password, "password", os.Getenv("DQCTL_PASSWORD"), "Redis `password` (env DQCTL_PASSWORD, which keeps it out of ps)")
	fs.IntVar(&c.db, "db", 0, "Redis database `number` (not with -cluster)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS")
	fs.BoolVar(&c.insecure, "tls-insecure", false, "with -tls: do not verify the server's certificate")
	fs.StringVar(&c.cluster, "cluster", "", "Redis Cluster: comma-separated seed `addrs` (instead of -redis)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "time limit for the command (watch and serve-metrics: per refresh or scrape)")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (c *conn) where() string {
	if c.cluster != "" {
		return "cluster " + c.cluster
	}
	return c.addr
}

// client connects and checks the server answers.
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
		addrs := strings.Split(c.cluster, ",")
		cl = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Username: c.user, Password: c.password, TLSConfig: tc})
	} else {
		cl = redis.NewClient(&redis.Options{Addr: c.addr, Username: c.user, Password: c.password, DB: c.db, TLSConfig: tc})
	}
	pctx, cancel := context.WithTimeout(ctx, min(c.timeout, 5*time.Second))
	defer cancel()
	if err := cl.Ping(pctx).Err(); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %v", c.where(), err)
	}
	return cl, nil
}

// command is one subcommand.
type command struct {
	name, args, help string
	min, max         int                            // positional arguments (max -1: no limit)
	flags            func(fs *flag.FlagSet, e *env) // the command's own flags, into e
	run              func(e *env) error
}

// env is what a command runs with.
type env struct {
	ctx    context.Context
	conn   *conn
	c      redis.UniversalClient
	args   []string // positional arguments
	stdin  *bufio.Reader
	stdout io.Writer
	stderr io.Writer

	// Command flags.
	json     bool
	yes      bool
	all      bool
	page     redisq.ListOptions
	listen   string
	interval time.Duration
	window   time.Duration
	count    int

	// serve's flags.
	readOnly  bool
	basicAuth string
	prefix    string
}

func (e *env) printf(format string, a ...any) { fmt.Fprintf(e.stdout, format, a...) }

// queue opens the queue named by args[0] and checks that it exists.
func (e *env) queue() (*redisq.Queue, error) {
	name := e.args[0]
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, usageErr("bad queue name %s: names are non-empty and hold no '{' or '}'", quote(name))
	}
	q, err := redisq.New(e.ctx, e.c, name, redisq.WithEvictionCheck(redisq.EvictionIgnore), redisq.WithoutRegistry())
	if err != nil {
		return nil, err
	}
	ok, err := q.Exists(e.ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound("no queue named %s on %s; nothing changed (dqctl queues lists them)", quote(name), e.conn.where())
	}
	return q, nil
}

// confirm asks the operator; -yes answers for them.
func (e *env) confirm(prompt, want string) error {
	if e.yes {
		return nil
	}
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

Commands:
`

const usageTail = `
Connection flags (accepted before or after COMMAND):
%s
Exit codes: 0 ok, 1 error, 2 bad usage, 3 no such queue or item, 4 aborted.
Run dqctl COMMAND -h for a command's flags.
`

func usage(w io.Writer, cmds []command) {
	fmt.Fprint(w, usageHead)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-14s %s\n  %-14s   %s\n", c.name, c.args, "", c.help)
	}
	var b strings.Builder
	fs := flag.NewFlagSet("dqctl", flag.ContinueOnError)
	fs.SetOutput(&b)
	new(conn).register(fs)
	fs.PrintDefaults()
	fmt.Fprintf(w, usageTail, b.String())
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
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
	if i < 0 {
		fmt.Fprintf(stderr, "dqctl: unknown command %s (dqctl -h lists them)\n", quote(name))
		return exitUsage
	}
	cmd := cmds[i]
	e := &env{ctx: ctx, conn: cn, stdin: bufio.NewReader(stdin), stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("dqctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dqctl %s [flags] %s\n  %s\n\nFlags:\n", cmd.name, cmd.args, cmd.help)
		fs.PrintDefaults()
	}
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
	if err := fs.Parse(top.Args()[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	e.args = fs.Args()
	err := func() error {
		if len(e.args) < cmd.min || (cmd.max >= 0 && len(e.args) > cmd.max) {
			return usageErr("wrong number of arguments")
		}
		c, err := cn.client(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		e.c = c
		return cmd.run(e)
	}()
	if err == nil {
		return exitOK
	}
	var ee *exitErr
	code := exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if ctx.Err() != nil && code == exitError {
		err = fmt.Errorf("interrupted: %w", err)
	}
	fmt.Fprintf(stderr, "dqctl %s: %s\n", cmd.name, clean(err.Error()))
	if code == exitUsage {
		fmt.Fprintf(stderr, "usage: dqctl %s [flags] %s\n", cmd.name, cmd.args)
	}
	return code
}
