package cmd

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestCommonOptionsCheck(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	valid := func() CommonOptions {
		return CommonOptions{Jobs: 1, ProgressInterval: time.Second}
	}
	for _, tt := range []struct {
		set  func(*CommonOptions)
		want string
	}{
		{func(o *CommonOptions) { o.Jobs = -1 }, `invalid argument -1 for "-j, --jobs": want at least 1, or 0 for the number of CPUs`},
		{func(o *CommonOptions) { o.Jobs = maxJobs + 1 }, `invalid argument 100001 for "-j, --jobs": want at most 100000`},
		{func(o *CommonOptions) { o.Retries = -1 }, `invalid argument -1 for "--retries": want at least 0`},
		{func(o *CommonOptions) { o.Timeout = -time.Second }, `invalid argument -1s for "--timeout": want at least 0`},
		{func(o *CommonOptions) { o.Margin = -time.Second }, `invalid argument -1s for "--margin": want at least 0`},
		{func(o *CommonOptions) { o.Grace = -time.Second }, `invalid argument -1s for "--grace": want at least 0`},
		{func(o *CommonOptions) { o.ProgressInterval = 999 * time.Millisecond }, `invalid argument 999ms for "--progress-interval": want at least 1s`},
		{func(o *CommonOptions) { o.Resume = true }, "--resume needs --joblog FILE"},
		{func(o *CommonOptions) { o.Redis.GlobalJobs = 2 }, "--global-jobs needs --redis"},
	} {
		o := valid()
		tt.set(&o)
		var fe *FlagError
		if err := o.check(); !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("check() = %v, want a FlagError %q", err, tt.want)
		}
	}
	o := valid()
	o.Jobs = 0
	if err := o.check(); err != nil || o.Jobs != runtime.NumCPU() {
		t.Errorf("check() with -j 0 = %v, Jobs %d; want nil, %d (the number of CPUs)", err, o.Jobs, runtime.NumCPU())
	}
}
