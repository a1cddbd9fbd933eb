package vtversion

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModuleIsGoModsPin: the version the build records is the one go.mod
// requires.
func TestModuleIsGoModsPin(t *testing.T) {
	b, err := os.ReadFile("../../../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*vitess\.io/vitess (v\S+)`).FindSubmatch(b)
	require.NotNil(t, m, "go.mod requires vitess.io/vitess")
	assert.Equal(t, string(m[1]), Module())
}

// TestPluginVersion: the version the Makefile stamps wins; a build without
// one says "devel", never "(devel)".
func TestPluginVersion(t *testing.T) {
	assert.Equal(t, "devel", Plugin())
	plugin = "v1.2.3-4-gabcdef"
	defer func() { plugin = "" }()
	assert.Equal(t, "v1.2.3-4-gabcdef", Plugin())
}
