package places

import (
	"path/filepath"
	"testing"
)

func TestPlaces(t *testing.T) {
	t.Setenv("GUILDS_HOME", "")
	t.Setenv("GUILDS_RUN_DIR", "")
	t.Setenv("GUILDS_CDP_URL", "")
	if Home() != DefaultHome || RunDir() != DefaultRunDir || CDPURL() != DefaultCDPURL {
		t.Fatalf("defaults: %s %s %s", Home(), RunDir(), CDPURL())
	}
	t.Setenv("GUILDS_HOME", "/tmp/x/../home//agent/")
	if got := Home(); got != "/tmp/home/agent" {
		t.Fatalf("Home() = %q, want the cleaned path", got)
	}
	t.Setenv("GUILDS_RUN_DIR", "rel/run")
	if got := RunDir(); !filepath.IsAbs(got) || filepath.Base(got) != "run" {
		t.Fatalf("RunDir() = %q, want an absolute path", got)
	}
	t.Setenv("GUILDS_CDP_URL", "http://127.0.0.1:1")
	if CDPURL() != "http://127.0.0.1:1" {
		t.Fatal("CDPURL ignores the environment")
	}
}

func TestResultMax(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{
		{"", DefaultResultMax}, {"8192", 8192}, {"20000", 20000}, {"100", 512}, {"0", DefaultResultMax},
		{"-5", DefaultResultMax}, {"lots", DefaultResultMax}, {"1e4", DefaultResultMax}, {"99999999999999999999", DefaultResultMax},
	} {
		t.Setenv("CODE_RESULT_MAX_BYTES", tc.env)
		if got := ResultMax(); got != tc.want {
			t.Errorf("ResultMax() with %q = %d, want %d", tc.env, got, tc.want)
		}
	}
}
