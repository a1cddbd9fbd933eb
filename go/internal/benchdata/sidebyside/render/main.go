// Command render re-renders docs/benchmarks.md (or -doc) and its chart from a results
// file written by `make bench`, e.g. after editing report.go or notes.md:
//
//	go run ./go/internal/benchdata/sidebyside/render [-doc=docs/benchmarks-x.md] [results.json [rerun.json ...]]
//
// Each further file's data sets replace the same data sets of the first
// (a data set re-run with BENCH_PLANS on a quieter machine).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/benchdata/sidebyside"
)

func main() {
	files := os.Args[1:]
	doc := filepath.Join("docs", "benchmarks.md")
	if len(files) > 0 && strings.HasPrefix(files[0], "-doc=") {
		doc, files = strings.TrimPrefix(files[0], "-doc="), files[1:]
	}
	if len(files) == 0 {
		files = []string{filepath.Join("build", "bench", "results.json")}
	}
	res, err := sidebyside.Load(files[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	for _, f := range files[1:] {
		later, err := sidebyside.Load(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "render:", err)
			os.Exit(1)
		}
		res.Merge(later)
	}
	if err := sidebyside.Render(res, doc, sidebyside.SVGFor(doc)); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", doc)
}
