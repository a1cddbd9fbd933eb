package vtfifocli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// The fleet view reads one summary per shard, which the split storage
// keeps (splitstorage/fleet.go) and this file fills: the shard's status
// without the checks, which depend on the time of the view, the test
// restore records that teach restore rates, and the work of restoring its
// newest backup, from which the rates of the whole fleet predict its
// restore time.

// shardSummary is the document the storage keeps of one shard.
type shardSummary struct {
	Version    int                           `json:"version"`
	Status     ShardStatus                   `json:"status"`
	Records    []testrestore.Record          `json:"records,omitempty"`
	NewestWork *fifobackupengine.RestoreWork `json:"newest_work,omitempty"`
}

const (
	shardSummaryVersion = 1
	// summaryRecords is how many of a shard's latest test restore records
	// with rates its summary keeps: testrestore.Rates uses the storage's
	// latest ten, whichever shards they are of.
	summaryRecords = 10
	// defaultSummaryMaxAge bounds how long a change made outside the
	// storage (objects removed by hand, a legacy storage's backup) can go
	// unseen.
	defaultSummaryMaxAge = 24 * time.Hour
)

// summaryUse is how a fleet view uses the summaries: their flags.
type summaryUse struct {
	maxAge  time.Duration
	rebuild bool
	workers int
}

func (u *summaryUse) register(fs *pflag.FlagSet) {
	fs.Var(flagvalue.Age{P: &u.maxAge, Allowed: "0 (no limit) or an age such as 12h, 1d or 1w"}, "summary-max-age",
		"without --keyspace/--shard: walk again the backups of a shard whose summary is older than this (give or take a quarter), which "+
			"is what sees changes made outside vtfifo and Vitess (objects removed by hand); a change made through them is seen at once")
	u.maxAge = defaultSummaryMaxAge
	fs.BoolVar(&u.rebuild, "rebuild-summaries", false, "without --keyspace/--shard: walk every shard's backups and save new summaries, "+
		"whatever the ones kept say")
	fs.IntVar(&u.workers, "fleet-workers", splitstorage.DefaultFleetWorkers, "without --keyspace/--shard: how many shards are read or "+
		"walked at once")
}

func (u *summaryUse) validate() error {
	switch {
	case u.maxAge < 0:
		return invalid("summary-max-age", u.maxAge.String(), "0 (no limit) or a positive duration")
	case u.workers < 1 || u.workers > 1024:
		return invalid("fleet-workers", fmt.Sprint(u.workers), "1 to 1024")
	}
	return nil
}

func (u *summaryUse) options(build func(ctx context.Context, dir string) ([]byte, error)) splitstorage.FleetOptions {
	return splitstorage.FleetOptions{Build: build, MaxAge: u.maxAge, Rebuild: u.rebuild, Workers: u.workers}
}

// summarize is the storage's Build: a walk of one shard's backups.
func (s *session) summarize(st fleetLister) func(ctx context.Context, dir string) ([]byte, error) {
	return func(ctx context.Context, dir string) ([]byte, error) {
		sh, recs, work := s.shardStatus(ctx, st, dir)
		if sh.Unread {
			return nil, errors.New(strings.Join(sh.Problems, "; "))
		}
		// The latest records that teach rates, newest first.
		slices.SortFunc(recs, func(a, b testrestore.Record) int { return b.Started.Compare(a.Started) })
		recs = slices.DeleteFunc(recs, func(r testrestore.Record) bool { _, ok := r.Sample(); return !ok })
		recs = recs[:min(len(recs), summaryRecords)]
		return json.Marshal(shardSummary{Version: shardSummaryVersion, Status: sh, Records: recs, NewestWork: work})
	}
}

// fromSummary is a shard's summary as the view shows it, and why its new
// summary was not saved ("": it was, or it was read). A shard the storage
// gave nothing of (a shard of the topology without backups) has the zero
// status.
func fromSummary(dir string, fs splitstorage.FleetShard) (shardSummary, string) {
	ks, shard, _ := strings.Cut(dir, "/")
	blank := ShardStatus{Keyspace: ks, Shard: shard}
	switch {
	case fs.Dir == "":
		return shardSummary{Status: blank}, ""
	case fs.Err != nil:
		blank.Problems, blank.Unread = []string{errtext.Line(fs.Err)}, true
		return shardSummary{Status: blank}, ""
	}
	var sum shardSummary
	if err := json.Unmarshal(fs.Doc, &sum); err != nil || sum.Version != shardSummaryVersion {
		blank.Problems, blank.Unread = []string{fmt.Sprintf("its summary is not one this vtfifo reads (version %d, %v): give --rebuild-summaries",
			sum.Version, err)}, true
		return shardSummary{Status: blank}, ""
	}
	sum.Status.Keyspace, sum.Status.Shard = ks, shard
	sum.Status.SummaryBuilt, sum.Status.Walked = fs.Built, fs.Rebuilt
	_, unsaved, _ := strings.Cut(fs.Rebuilt, splitstorage.NotSaved)
	return sum, unsaved
}

// noteSummaries says on stderr which summaries could not be saved
// (read-only credentials: every view then walks those shards).
func (s *session) noteSummaries(unsaved []string) {
	if len(unsaved) > 0 {
		s.o.notef("%d shard summaries could not be saved, so every view walks those shards again (the view needs to write under .fleet/ "+
			"of the storage): %s", len(unsaved), strings.Join(unsaved[:min(3, len(unsaved))], "; "))
	}
}

// summariesLine is what a refresh read, walked and cost.
func summariesLine(rep splitstorage.FleetReport) string {
	line := fmt.Sprintf("%d shards: %d from their summaries, %d walked", rep.Shards, rep.Read, rep.Rebuilt)
	if rep.Failed > 0 {
		line += fmt.Sprintf(", %d could not be read", rep.Failed)
	}
	if n := rep.Requests.Total(); n > 0 {
		line += fmt.Sprintf("; %s requests (%s per shard)", humanize.Comma(n), perShard(n, rep.Shards))
	}
	return line + fmt.Sprintf(" in %s", rep.Took.Round(10*time.Millisecond))
}

func perShard(n int64, shards int) string {
	if shards == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/float64(shards))
}
