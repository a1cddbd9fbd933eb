package benchdata

import (
	"context"
	"os"
	"testing"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

func TestZZDumpStream(t *testing.T) {
	out := os.Getenv("ZZ_OUT")
	if out == "" {
		t.Skip("tmp")
	}
	srv := mariadbtest.Start(t)
	_, err := Load(context.Background(), srv.DB(), Options{Shape: Mixed, Bytes: 512 << 20, Seed: 1, DataDir: srv.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	n := mariadbtest.BackupToFile(t, srv, out)
	t.Logf("stream %d bytes", n)
}
