package httpapi

// RouteAccess is one row of the route table as code outside the package
// sees it: tests that must cover every route (the auth matrix) walk it, so
// a new route is covered the day it is added.
type RouteAccess struct {
	Method string
	Path   string // the ServeMux pattern's path, with {wildcards}
	// Access is who may call the route: "anyone" and "probe" need no token,
	// "admin" the admin token, "reader" the admin or any user token,
	// "actor" a user token (the route acts as the token's user).
	Access string
}

// Routes returns the route table without its handlers. It is exported for
// one reader outside the package: the auth matrix of cmd/feedd, which sends
// every route bad credentials over the real program and so cannot live
// here. A test inside the package walks routes itself.
func Routes() []RouteAccess {
	rs := routes(nil, nil, nil, nil, nil, nil, nil, nil) // handler makers only capture their arguments
	out := make([]RouteAccess, len(rs))
	for i, rt := range rs {
		out[i] = RouteAccess{Method: rt.method, Path: rt.path, Access: rt.access.String()}
	}
	return out
}

func (a access) String() string {
	switch a {
	case anyone:
		return "anyone"
	case probe:
		return "probe"
	case admin:
		return "admin"
	case reader:
		return "reader"
	case actor, actorOrTicket:
		return "actor"
	}
	return "unknown"
}
