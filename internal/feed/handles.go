package feed

import "strings"

// A handle is a user's unique name in URLs and mentions ("@alice"): 1 to
// MaxHandleLen of [a-z0-9_]. It is unique whatever the case: a handle sent
// with capitals is folded to lower case (CheckHandle) and stored, compared
// and shown so, so "Alice" and "alice" are one handle. A user may have
// none.

// MaxHandleLen bounds a handle.
const MaxHandleLen = 30

// CheckHandle returns h folded to lower case, or an EINVALID error saying
// why it is no handle. It is the one rule for the API, the import and
// every store.
func CheckHandle(h string) (string, error) {
	if h == "" || len(h) > MaxHandleLen {
		return "", Errorf(EINVALID, "a handle has 1 to %d characters", MaxHandleLen)
	}
	low := strings.ToLower(h)
	if !handleChars(low) {
		return "", Errorf(EINVALID, "a handle has only the letters a to z, digits and _")
	}
	return low, nil
}

func handleChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// HandleTaken is the EHANDLETAKEN error of h.
func HandleTaken(h string) *Error {
	return Errorf(EHANDLETAKEN, "handle %q is taken", h)
}

// NameKey is what a name search compares: the name in lower case. Stores
// keep it beside the name (an index of users by it), so that "name
// matches" is a prefix of the name, whatever the case, read from an index.
func NameKey(name string) string { return strings.ToLower(name) }

// MaxSearch bounds a search's answer, and MaxQueryRunes its query.
const (
	MaxSearch     = 100
	MaxQueryRunes = MaxNameRunes
)

// UserQuery is a search of users as the stores run it: the users whose
// handle starts with Handle (when not ""), then those whose NameKey
// starts with Name (when not "").
type UserQuery struct {
	Handle string
	Name   string
}

// ParseUserQuery reads a search as a person types it: "@ali" looks for
// handles only, "ali" for handles and names, "Ali Smith" (no handle can
// hold a space) for names only. EINVALID for an empty query or one longer
// than a name.
func ParseUserQuery(q string) (UserQuery, error) {
	q = strings.TrimSpace(q)
	if q == "" || len([]rune(q)) > MaxQueryRunes {
		return UserQuery{}, Errorf(EINVALID, "q must have 1 to %d characters", MaxQueryRunes)
	}
	var uq UserQuery
	h, isHandle := strings.CutPrefix(q, "@")
	low := strings.ToLower(h)
	if len(low) > 0 && len(low) <= MaxHandleLen && handleChars(low) {
		uq.Handle = low
	}
	if !isHandle {
		uq.Name = NameKey(q)
	}
	if uq.Handle == "" && uq.Name == "" {
		return UserQuery{}, Errorf(EINVALID, "%q can be no handle: a handle has only the letters a to z, digits and _", q)
	}
	return uq, nil
}

// UserEdit is a change to a user's profile: the fields set replace the
// user's. A Handle of "" removes the user's handle.
type UserEdit struct {
	Name   *string
	Handle *string
}

// Check refuses an edit that changes nothing and checks each field,
// folding the handle to lower case.
func (e *UserEdit) Check() error {
	if e.Name == nil && e.Handle == nil {
		return Errorf(EINVALID, "send the name, the handle or both to change a user")
	}
	if e.Name != nil {
		if err := CheckName(*e.Name); err != nil {
			return err
		}
	}
	if e.Handle != nil && *e.Handle != "" {
		h, err := CheckHandle(*e.Handle)
		if err != nil {
			return err
		}
		e.Handle = &h
	}
	return nil
}

// Relationship is how one user stands to another, as the first sees it.
type Relationship struct {
	Following  bool // the first follows the second
	FollowedBy bool // the second follows the first
	// Reposts is whether the first sees the second's reposts in its home
	// feed: it follows the second and did not turn them off
	// (PUT /v1/me/following/{id} {"reposts": false}).
	Reposts  bool
	Muting   bool // the first mutes the second
	Blocking bool // the first blocks the second
	// BlockedBy is whether the second blocks the first: the API then
	// answers as for a missing user (unless the first blocks too).
	BlockedBy bool
}
