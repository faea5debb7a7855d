package brains

// Empty reports whether c holds nothing to show: it is nil, or all its
// lists are empty.
func (c *SharedContext) Empty() bool {
	return c == nil || len(c.Events) == 0 && len(c.Entities) == 0 && len(c.Facts) == 0 && len(c.Chain) == 0
}

// Outputs are the files the chain's steps produced, one a name: where
// two steps produced the same name, the later step's (the chain is
// oldest first, so a newer output wins). Names come in the order they
// first appear in the chain. It returns nil for a nil c.
func (c *SharedContext) Outputs() []Artifact {
	if c == nil {
		return nil
	}
	var out []Artifact
	at := make(map[string]int)
	for _, s := range c.Chain {
		for _, a := range s.Outputs {
			if i, ok := at[a.Name]; ok {
				out[i] = a
				continue
			}
			at[a.Name] = len(out)
			out = append(out, a)
		}
	}
	return out
}
