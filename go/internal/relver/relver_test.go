package relver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOlder(t *testing.T) {
	for _, c := range []struct {
		have, than string
		older      bool
	}{
		{"8.0.30", "8.0.35-30", true},
		{"8.0.35-30", "8.0.35-29", false}, // the same release: builds are not compared
		{"8.4.0", "8.0.36", false},
		{"10.6.21-MariaDB", "10.11.19-MariaDB-0+deb12u1-log Debian 12", true},
		{"10.11.19", "10.11.9", false},
		{"11.4.2", "10.11.19", false},
		{"", "8.0.35", false},
		{"8.0.35", "unknown", false},
	} {
		assert.Equal(t, c.older, Older(c.have, c.than), "%s before %s", c.have, c.than)
	}
	assert.Equal(t, "10.11.19", Of("based on MariaDB server 10.11.19-MariaDB debian-linux-gnu"))
	assert.Equal(t, "", Of("no release"))
}
