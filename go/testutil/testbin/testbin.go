// Package testbin builds the project's helper programs (the xtrabackup
// stand-in, fifoverify, ...) once per test binary, for tests that run them as
// real processes.
package testbin

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Program is one package to build: its binary is named Name and its path
// stored in *Path before the tests run.
type Program struct {
	Package string
	Name    string
	Path    *string
}

// HelperEnv, set in the environment of a test binary that a test starts again
// to play a process (a helper), makes Main build nothing: the helper needs
// none of the programs, starting it stays fast on a busy machine, and a
// helper that is killed leaves no directory behind.
const HelperEnv = "TESTBIN_HELPER=1"

// PrebuiltEnv names a directory holding the programs already built (each as
// its Name), for a compiled test binary carried to a host without Go
// (scripts/bench-bundle.sh): Main then builds nothing and removes nothing.
const PrebuiltEnv = "TESTBIN_PREBUILT_DIR"

// Main builds the programs into a temporary directory, runs the tests and
// removes the directory. Use it as the package's TestMain.
func Main(m *testing.M, progs ...Program) {
	if !flag.Parsed() {
		flag.Parse()
	}
	// A helper needs no program; nor does listing the tests (go test -list,
	// as scripts/gotest.sh does to deal them into shards).
	if os.Getenv("TESTBIN_HELPER") == "1" || flag.Lookup("test.list").Value.String() != "" {
		os.Exit(m.Run())
	}
	if dir := os.Getenv(PrebuiltEnv); dir != "" {
		for _, p := range progs {
			*p.Path = filepath.Join(dir, p.Name)
			if _, err := os.Stat(*p.Path); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %s was not built: %v\n", PrebuiltEnv, p.Package, err)
				os.Exit(1)
			}
		}
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "testbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, p := range progs {
		*p.Path = filepath.Join(dir, p.Name)
		if out, err := exec.Command("go", "build", "-o", *p.Path, p.Package).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "cannot build %s: %v\n%s", p.Package, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Standin is the xtrabackup stand-in (go/testutil/xtrabackupstandin), named
// xtrabackup as the engine's tool detection expects.
func Standin(path *string) Program {
	return Program{Package: "github.com/vtfifo/vtfifo/go/testutil/xtrabackupstandin", Name: "xtrabackup", Path: path}
}
