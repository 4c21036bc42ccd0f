package httpapi

import (
	"net/http"

	"github.com/feedd/feedd/internal/feed"
)

// settingsJSON is a reader's settings as the API shows them.
type settingsJSON struct {
	HomeReplies string `json:"home_replies"`
}

func toSettingsJSON(st feed.Settings) settingsJSON {
	return settingsJSON{HomeReplies: st.HomeReplies.String()}
}

// setSettingsRequest is PUT /v1/me/settings: the settings sent change,
// the others stay as they are.
type setSettingsRequest struct {
	HomeReplies *string `json:"home_replies"`
}

func (req setSettingsRequest) valid() error {
	if req.HomeReplies == nil {
		return feed.Errorf(feed.EINVALID, "send the settings to change: home_replies")
	}
	_, err := feed.ParseHomeReplies(*req.HomeReplies)
	return err
}

func handleSettingsGet(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		st, err := svc.Settings(r.Context(), me)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, toSettingsJSON(st))
		return nil
	})
}

func handleSettingsPut(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		req, err := decode[setSettingsRequest](r)
		if err != nil {
			return err
		}
		st, err := svc.Settings(r.Context(), me)
		if err != nil {
			return err
		}
		// valid has parsed it.
		st.HomeReplies, _ = feed.ParseHomeReplies(*req.HomeReplies)
		if err := svc.SetSettings(r.Context(), me, st); err != nil {
			return err
		}
		encode(w, http.StatusOK, toSettingsJSON(st))
		return nil
	})
}
