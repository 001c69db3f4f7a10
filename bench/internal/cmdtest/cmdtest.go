// Package cmdtest runs a command's main from its tests: the test binary
// runs itself as the command.
package cmdtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/goleak"
)

// env tells the test binary to run the command's main instead of tests.
const env = "BENCH_CMDTEST_MAIN"

// Main is a command's TestMain: in a process Run started it runs main and
// exits; else it runs the tests and checks that they leaked no goroutine.
func Main(m *testing.M, main func()) {
	if os.Getenv(env) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// Run runs the command (the test binary, through Main) with args and
// returns its exit status and what it wrote.
func Run(t *testing.T, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// WrongCommand checks that each -impl of impls (a value in the list given,
// the one the error names) makes the command exit with status 2 and want's
// one line on stderr, nothing else; extra are more arguments.
func WrongCommand(t *testing.T, impls map[string]string, want func(impl string) string, extra ...string) {
	t.Helper()
	for given, impl := range impls {
		status, stdout, stderr := Run(t, append([]string{"-impl", given}, extra...)...)
		if w := want(impl) + "\n"; status != 2 || stdout != "" || stderr != w {
			t.Errorf("-impl %s: exit status %d, stdout %q, stderr %q; want 2, nothing and %q", given, status, stdout, stderr, w)
		}
	}
}
