package splitstoragetest

import (
	"testing"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// Kind is one backend the tests run on: how its test server starts, and how
// a store is pointed at it through a fault proxy (nil: local, no network).
type Kind struct {
	Name  string
	Start func(t testing.TB) *Server
	proxy func(c *Server, p *FaultProxy)
}

// Kinds is the one list of the backends the tests run on. Every test "on
// every backend" takes its list from All or Remote, and TestKindsAreEveryBackend
// fails when a backend of the storage is missing here: a new backend is
// tested everywhere once it has its entry.
var Kinds = []Kind{
	{Name: splitstorage.BackendFile, Start: Local},
	{Name: splitstorage.BackendS3, Start: StartS3, proxy: func(c *Server, p *FaultProxy) {
		p.PreserveHost = true
		c.Config.S3.Endpoint = "http://" + p.Addr
	}},
	{Name: splitstorage.BackendGCS, Start: StartGCS, proxy: func(c *Server, p *FaultProxy) { c.Env["STORAGE_EMULATOR_HOST"] = p.Addr }},
	{Name: splitstorage.BackendAzure, Start: StartAzure, proxy: func(c *Server, p *FaultProxy) {
		c.Config.Azure.Endpoint = "http://" + p.Addr + "/" + AzureAccount
	}},
}

// All names every backend the tests run on.
func All() []string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	return names
}

// Remote names the backends reached over the network (a fault proxy can
// stand between the store and them).
func Remote() []string {
	var names []string
	for _, k := range Kinds {
		if k.proxy != nil {
			names = append(names, k.Name)
		}
	}
	return names
}

// LocalAndRemote names one backend on this host and one over the network
// (the first of each in Kinds): the two a test takes when what it proves
// does not depend on the store (the conformance suite, on All, proves each
// store keeps the contract), so that it runs on both kinds of path without
// a hand-picked list.
func LocalAndRemote() []string {
	var local, remote string
	for _, k := range Kinds {
		switch {
		case k.proxy == nil && local == "":
			local = k.Name
		case k.proxy != nil && remote == "":
			remote = k.Name
		}
	}
	return []string{local, remote}
}

func kindOf(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}
