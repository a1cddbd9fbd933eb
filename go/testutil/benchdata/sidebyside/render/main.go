// Command render re-renders docs/benchmarks/side-by-side.md (or -doc) and its chart from a results
// file written by `make bench`, e.g. after editing report.go or notes.md:
//
//	go run ./go/testutil/benchdata/sidebyside/render [-doc=docs/benchmarks/x.md]
//		[-memory=mem.json -memory-doc=docs/benchmarks/memory-x.md] [results.json [rerun.json ...]]
//
// Each further file's data sets replace the same data sets of the first
// (a data set re-run with BENCH_PLANS on a quieter machine). -memory adds the
// memory table of another run (MemoryTable), whose own page is -memory-doc.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vtfifo/vtfifo/go/testutil/benchdata/sidebyside"
)

func main() {
	doc := flag.String("doc", filepath.Join("docs", "benchmarks", "side-by-side.md"), "the page to write")
	memory := flag.String("memory", "", "results of a memory run whose table the page carries")
	memoryDoc := flag.String("memory-doc", "", "that run's own page (linked from the table)")
	flag.Parse()
	if err := run(*doc, *memory, *memoryDoc, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *doc)
}

func run(doc, memory, memoryDoc string, files []string) error {
	if len(files) == 0 {
		files = []string{filepath.Join("build", "bench", "results.json")}
	}
	res, err := sidebyside.Load(files[0])
	if err != nil {
		return err
	}
	for _, f := range files[1:] {
		later, err := sidebyside.Load(f)
		if err != nil {
			return err
		}
		res.Merge(later)
	}
	section := ""
	if memory != "" {
		if memoryDoc == "" {
			return fmt.Errorf("-memory needs -memory-doc, the memory run's own page")
		}
		mem, err := sidebyside.Load(memory)
		if err != nil {
			return err
		}
		link, err := filepath.Rel(filepath.Dir(doc), memoryDoc)
		if err != nil {
			return err
		}
		if filepath.Clean(memoryDoc) == filepath.Clean(doc) {
			link = "" // the memory run's own page
		}
		section = sidebyside.MemoryTable(mem, filepath.ToSlash(link))
	}
	return sidebyside.RenderWith(res, doc, sidebyside.SVGFor(doc), section)
}
