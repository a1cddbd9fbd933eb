package tableimport

import "errors"

// ErrReplicaBehind marks a copy that a replica did not apply in time
// (Replicas): the replica's state, not the table's.
var ErrReplicaBehind = errors.New("a replica did not apply the copy in time")

type replicaBehind struct{ error }

func (replicaBehind) Is(target error) bool { return target == ErrReplicaBehind }
