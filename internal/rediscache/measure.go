package rediscache

// What bench, tests of other packages and operators may use to measure
// the inbox layout without knowing it. Everything else about an inbox —
// its ids, whether it exists or is complete — is read through
// feed.Inboxes (InboxPage), and the commands a client sends are counted by
// a CommandCounter (count.go).

// InboxKeys returns the keys reader's inbox occupies (whether or not they
// exist now), all of one hash tag and so of one Cluster slot: to find the
// node that holds an inbox, or to sum the MEMORY USAGE of inboxes and tell
// it apart from the other keys under the prefix.
func (c *Cache) InboxKeys(reader int64) []string {
	return c.keys(reader)
}
