// Command checkfiles fails when the repository tracks a binary or a large
// file, which belongs in a release or a build, not in git history (CI runs
// it first, in .ci/run):
//
//	go run ./scripts/checkfiles
//
// Every file `git ls-files` lists must be at most 1 MiB and text: no NUL
// byte in its first 8 KiB (git's own test for a binary) and valid UTF-8
// throughout. Images under docs/ (.png, .svg, .jpg) are the exception: the
// README shows them. Files listed but deleted from the work tree, symbolic
// links and submodules are not checked. It prints each offender with the
// reason and exits 1; 2 when git cannot list the files.
// Standard library only, so the root module keeps zero dependencies.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
	"unicode/utf8"
)

const (
	maxSize  = 1 << 20 // bytes
	sniffLen = 8 << 10 // bytes searched for a NUL, as git does
)

func main() {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkfiles: git ls-files:", err)
		os.Exit(2)
	}
	bad := 0
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if name == "" || exempt(name) {
			continue
		}
		problem, err := check(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkfiles:", err)
			os.Exit(2)
		}
		if problem != "" {
			fmt.Printf("%s: %s\n", name, problem)
			bad++
		}
	}
	if bad > 0 {
		fmt.Printf("checkfiles: %d tracked file(s) above are binaries or over 1 MiB: "+
			"delete them from git (git rm --cached FILE) and ignore build outputs in .gitignore\n", bad)
		os.Exit(1)
	}
}

// exempt reports whether name is an image under docs/, which may be binary
// and large.
func exempt(name string) bool {
	switch path.Ext(name) {
	case ".png", ".svg", ".jpg":
		return strings.HasPrefix(name, "docs/")
	}
	return false
}

// check returns why the tracked file name may not be tracked, or "".
func check(name string) (string, error) {
	info, err := os.Lstat(name)
	if os.IsNotExist(err) {
		return "", nil // deleted in the work tree: the next commit drops it
	}
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", nil
	}
	if info.Size() > maxSize {
		return fmt.Sprintf("%d bytes, over the 1 MiB limit", info.Size()), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
		return "binary (a NUL byte in its first 8 KiB)", nil
	}
	if !utf8.Valid(data) {
		return "binary (not valid UTF-8 text)", nil
	}
	return "", nil
}
