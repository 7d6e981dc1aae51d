package gateway

// MaxFileBytes is the most bytes a file of an input may hold
// (Config.MaxFileBytes, or its default): what a transport that fetches a
// file for an input reads at most.
func (g *Gateway) MaxFileBytes() int64 { return g.maxFile() }

// MaxInputFileBytes is the most bytes an input's files may hold in all
// (Config.MaxInputFileBytes, or its default).
func (g *Gateway) MaxInputFileBytes() int64 { return g.maxFiles() }
