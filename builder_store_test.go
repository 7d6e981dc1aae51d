package agentrt_test

import (
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
)

func newStore() session.Store { return memstore.New() }
