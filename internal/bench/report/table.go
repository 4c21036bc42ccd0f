package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as plain-text tables: one column per
// model, then the targets.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "\t"
	for _, m := range r.ModelOrder {
		head += m + "\t"
	}
	row := func(label string, cell func(m *ModelResult) string) {
		line := label + "\t"
		any := false
		for _, name := range r.ModelOrder {
			c := cell(r.Models[name])
			if c != "" {
				any = true
			} else {
				c = "-"
			}
			line += c + "\t"
		}
		if any {
			fmt.Fprintln(tw, line)
		}
	}
	f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	fmt.Fprintf(tw, "%s\n", head)

	fmt.Fprintln(tw, "fanout\t")
	row("  author followers", func(m *ModelResult) string {
		if m.Fanout == nil {
			return ""
		}
		return fmt.Sprintf("%d (%s)", m.Fanout.Followers, m.Fanout.DeliveryMode)
	})
	row("  fanout_seconds", func(m *ModelResult) string {
		if m.Fanout == nil || !m.Fanout.FannedOut {
			return ""
		}
		return fmt.Sprintf("%.2f", m.Fanout.FanoutSeconds)
	})
	row("  fanout_writes_per_sec", func(m *ModelResult) string {
		if m.Fanout == nil || !m.Fanout.FannedOut {
			return ""
		}
		return Count(int64(m.Fanout.FanoutWritesPerSec))
	})
	row("  baseline_writes_per_sec", func(m *ModelResult) string {
		if m.Fanout == nil || m.Fanout.FanoutBaselineWritesPerSec == 0 {
			return ""
		}
		return fmt.Sprintf("%s (%d gor.)", Count(int64(m.Fanout.FanoutBaselineWritesPerSec)), m.Fanout.FanoutBaselineGoroutines)
	})
	row("  fanout vs baseline", func(m *ModelResult) string {
		if m.Fanout == nil || !m.Fanout.FannedOut || m.Fanout.FanoutVsBaseline == 0 {
			return ""
		}
		return f2(m.Fanout.FanoutVsBaseline)
	})
	row("  verified inboxes", func(m *ModelResult) string {
		if m.Fanout == nil || m.Fanout.VerifySample == 0 {
			return ""
		}
		return fmt.Sprintf("%d/%d", m.Fanout.VerifiedOK, m.Fanout.VerifySample)
	})

	fmt.Fprintln(tw, "publish (ms)\t")
	pub := func(label string, get func(*PublishResult) *PublishLatency) {
		row("  "+label+" p50 / p99", func(m *ModelResult) string {
			if m.Publish == nil || get(m.Publish) == nil {
				return ""
			}
			p := get(m.Publish)
			return fmt.Sprintf("%.2f / %.2f", p.PublishP50MS, p.PublishP99MS)
		})
	}
	pub("0 followers", func(p *PublishResult) *PublishLatency { return p.ZeroFollowers })
	pub("celebrity", func(p *PublishResult) *PublishLatency { return p.Celebrity })
	row("  writes during celebrity", func(m *ModelResult) string {
		if m.Publish == nil || m.Publish.Celebrity == nil {
			return ""
		}
		return Count(m.Publish.Celebrity.FanoutWritesDuring)
	})

	for _, cohort := range sortedKeys(r.cohorts()) {
		fmt.Fprintf(tw, "read %s\t\n", cohort)
		get := func(m *ModelResult) *ReadResult { return m.Read[cohort] }
		row("  read_rps", func(m *ModelResult) string {
			if get(m) == nil {
				return ""
			}
			return fmt.Sprintf("%.0f", get(m).ReadRPS)
		})
		row("  p50 / p99 ms", func(m *ModelResult) string {
			if get(m) == nil {
				return ""
			}
			return fmt.Sprintf("%.2f / %.2f", get(m).ReadP50MS, get(m).ReadP99MS)
		})
		row("  baseline rps (p99 ms)", func(m *ModelResult) string {
			if get(m) == nil || get(m).ReadBaselineRPS == 0 {
				return ""
			}
			return fmt.Sprintf("%.0f (%.2f)", get(m).ReadBaselineRPS, get(m).ReadBaselineP99MS)
		})
		row("  HTTP floor rps (p99 ms)", func(m *ModelResult) string {
			if get(m) == nil || get(m).ReadFloorRPS == 0 {
				return ""
			}
			return fmt.Sprintf("%.0f (%.2f)", get(m).ReadFloorRPS, get(m).ReadFloorP99MS)
		})
		row("  vs baseline", func(m *ModelResult) string {
			if get(m) == nil || get(m).ReadVsBaseline == 0 {
				return ""
			}
			return f2(get(m).ReadVsBaseline)
		})
		row("  paced rps (offered)", func(m *ModelResult) string {
			if get(m) != nil && get(m).ReadPacedSkipped != "" {
				return "not run: above rps"
			}
			if get(m) == nil || get(m).ReadPacedRPSTarget == 0 {
				return ""
			}
			return fmt.Sprintf("%.0f (%.0f)", get(m).ReadPacedRPS, get(m).ReadPacedRPSTarget)
		})
		row("  paced p50 / p99 ms", func(m *ModelResult) string {
			if get(m) == nil || get(m).ReadPacedRPSTarget == 0 {
				return ""
			}
			s := fmt.Sprintf("%.2f / %.2f", get(m).ReadPacedP50MS, get(m).ReadPacedP99MS)
			if late := get(m).ReadPacedLate; late > 0 {
				s += fmt.Sprintf(", %d late", late)
			}
			return s
		})
		row("  items/page, errors", func(m *ModelResult) string {
			if get(m) == nil {
				return ""
			}
			return fmt.Sprintf("%.1f, %d", get(m).ItemsPerPage, get(m).Errors)
		})
		row("  paths", func(m *ModelResult) string {
			if get(m) == nil {
				return ""
			}
			return pathsStr(get(m).Paths)
		})
	}

	for _, cohort := range sortedKeys(r.cohorts()) {
		get := func(m *ModelResult) *RankedResult { return m.Ranked[cohort] }
		if !slices.ContainsFunc(r.ModelOrder, func(name string) bool { return get(r.Models[name]) != nil }) {
			continue
		}
		fmt.Fprintf(tw, "ranked %s (p50 / p99 ms)\t\n", cohort)
		pair := func(label string, p50, p99 func(*RankedResult) float64) {
			row(label, func(m *ModelResult) string {
				if get(m) == nil {
					return ""
				}
				return fmt.Sprintf("%.2f / %.2f", p50(get(m)), p99(get(m)))
			})
		}
		pair("  latest first page", func(r *RankedResult) float64 { return r.LatestFirstP50MS }, func(r *RankedResult) float64 { return r.LatestFirstP99MS })
		pair("  ranked first page", func(r *RankedResult) float64 { return r.RankedFirstP50MS }, func(r *RankedResult) float64 { return r.RankedFirstP99MS })
		pair("  latest next page", func(r *RankedResult) float64 { return r.LatestNextP50MS }, func(r *RankedResult) float64 { return r.LatestNextP99MS })
		pair("  ranked next page", func(r *RankedResult) float64 { return r.RankedNextP50MS }, func(r *RankedResult) float64 { return r.RankedNextP99MS })
		pair("  ranked cold first page", func(r *RankedResult) float64 { return r.RankedColdP50MS }, func(r *RankedResult) float64 { return r.RankedColdP99MS })
		row("  rounds, errors", func(m *ModelResult) string {
			if get(m) == nil {
				return ""
			}
			return fmt.Sprintf("%d, %d", get(m).Rounds, get(m).Errors)
		})
	}

	for _, cohort := range sortedKeys(r.cohorts()) {
		get := func(m *ModelResult) *ListsResult { return m.Lists[cohort] }
		if !slices.ContainsFunc(r.ModelOrder, func(name string) bool { return get(r.Models[name]) != nil }) {
			continue
		}
		fmt.Fprintf(tw, "lists %s (p50 / p99 ms)\t\n", cohort)
		pair := func(label string, p50, p99 func(*ListsResult) float64) {
			row(label, func(m *ModelResult) string {
				if get(m) == nil {
					return ""
				}
				return fmt.Sprintf("%.2f / %.2f", p50(get(m)), p99(get(m)))
			})
		}
		pair("  home first page", func(l *ListsResult) float64 { return l.HomeFirstP50MS }, func(l *ListsResult) float64 { return l.HomeFirstP99MS })
		pair("  list first page", func(l *ListsResult) float64 { return l.ListFirstP50MS }, func(l *ListsResult) float64 { return l.ListFirstP99MS })
		pair("  home next page", func(l *ListsResult) float64 { return l.HomeNextP50MS }, func(l *ListsResult) float64 { return l.HomeNextP99MS })
		pair("  list next page", func(l *ListsResult) float64 { return l.ListNextP50MS }, func(l *ListsResult) float64 { return l.ListNextP99MS })
		row("  members, rounds, errors", func(m *ModelResult) string {
			if get(m) == nil {
				return ""
			}
			return fmt.Sprintf("%.0f, %d, %d", get(m).MembersPerList, get(m).Rounds, get(m).Errors)
		})
	}

	if slices.ContainsFunc(r.ModelOrder, func(name string) bool { return r.Models[name].Search != nil }) {
		fmt.Fprintf(tw, "search (p50 / p99 ms)\t\n")
		pair := func(label string, p50, p99 func(*SearchResult) float64) {
			row(label, func(m *ModelResult) string {
				if m.Search == nil {
					return ""
				}
				return fmt.Sprintf("%.2f / %.2f", p50(m.Search), p99(m.Search))
			})
		}
		pair("  home first page", func(s *SearchResult) float64 { return s.HomeFirstP50MS }, func(s *SearchResult) float64 { return s.HomeFirstP99MS })
		pair("  search", func(s *SearchResult) float64 { return s.SearchP50MS }, func(s *SearchResult) float64 { return s.SearchP99MS })
		row("  users a search, rounds, errors", func(m *ModelResult) string {
			if m.Search == nil {
				return ""
			}
			return fmt.Sprintf("%.1f, %d, %d", m.Search.ItemsPerSearch, m.Search.Rounds, m.Search.Errors)
		})
	}

	if slices.ContainsFunc(r.ModelOrder, func(name string) bool { return r.Models[name].Notifications != nil }) {
		fmt.Fprintf(tw, "notifications (p50 / p99 ms)\t\n")
		pair := func(label string, p50, p99 func(*NotificationsResult) float64) {
			row(label, func(m *ModelResult) string {
				if m.Notifications == nil {
					return ""
				}
				return fmt.Sprintf("%.2f / %.2f", p50(m.Notifications), p99(m.Notifications))
			})
		}
		pair("  home first page", func(n *NotificationsResult) float64 { return n.HomeFirstP50MS }, func(n *NotificationsResult) float64 { return n.HomeFirstP99MS })
		pair("  notifications", func(n *NotificationsResult) float64 { return n.NotificationsP50MS }, func(n *NotificationsResult) float64 { return n.NotificationsP99MS })
		row("  group's likes, rounds, errors", func(m *ModelResult) string {
			if m.Notifications == nil {
				return ""
			}
			return fmt.Sprintf("%d, %d, %d", m.Notifications.ActorCount, m.Notifications.Rounds, m.Notifications.Errors)
		})
	}

	fmt.Fprintln(tw, "memory\t")
	row("  redis_bytes_total", func(m *ModelResult) string {
		if m.Memory == nil {
			return ""
		}
		s := Bytes(m.Memory.RedisBytesTotal)
		if m.Memory.Sampled {
			s += " ~"
		}
		return s
	})
	row("  inbox keys bytes", func(m *ModelResult) string {
		if m.Memory == nil {
			return ""
		}
		return Bytes(m.Memory.RedisInboxBytes)
	})
	row("  entries", func(m *ModelResult) string {
		if m.Memory == nil {
			return ""
		}
		return Count(m.Memory.RedisEntries)
	})
	row("  redis_bytes_per_entry", func(m *ModelResult) string {
		if m.Memory == nil || m.Memory.RedisEntries == 0 {
			return ""
		}
		return fmt.Sprintf("%.1f", m.Memory.RedisBytesPerEntry)
	})
	row("  keys (measured)", func(m *ModelResult) string {
		if m.Memory == nil {
			return ""
		}
		return fmt.Sprintf("%d (%d)", m.Memory.Keys, m.Memory.MeasuredKeys)
	})
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tvalue\tgoal\tmet\tdetail")
	for _, t := range r.Targets {
		v, met := "n/a", "n/a"
		if t.Value != nil {
			v = fmt.Sprintf("%.3g", *t.Value)
		}
		if t.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*t.Met]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, v, t.Goal, met, t.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeStream(w); err != nil {
		return err
	}
	if err := r.writeMixed(w); err != nil {
		return err
	}
	for _, name := range r.ModelOrder {
		for _, e := range r.Models[name].Errors {
			fmt.Fprintf(w, "error [%s]: %s\n", name, e)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func pathsStr(p map[string]float64) string {
	keys := make([]string, 0, len(p))
	for k, v := range p {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %s", k, Count(int64(p[k])))
	}
	return strings.Join(parts, ", ")
}
