# Varnish in front of cms-shield: caches the pages API for as long as cms-shield's `s-maxage` says
# (CDN_MAX_AGE, 1 h by default) and drops exactly what an edit changed when cms-shield purges it by
# surrogate key. Needs Varnish 7.x with the xkey vmod (Debian/Ubuntu: `varnish-modules`; the
# official `varnish` images on Docker Hub ship it).
#
# The purge cms-shield sends (docs/cdn-purging.md#varnish-xkey):
#
#   PURGE / HTTP/1.1
#   xkey-purge: cms-page-42 cms-children-7          (or xkey-softpurge: …)
#
# Every answer cms-shield gives carries `Surrogate-Key: cms-pages cms-page-42 cms-summary-7 …`
# naming the inputs its bytes are made of; one edit purges the keys of the inputs it changed, so
# exactly the answers whose bytes changed (docs/cdn-purging.md#the-keys). The header stays within
# 4 KB, half of Varnish's `http_resp_hdr_len` default.
#
# Every cms-shield instance is a backend of one round-robin director: they all serve the same
# snapshot (the syncing one purges only once every instance serves the new one), so any of them
# may answer any request, and Varnish stops asking one whose `/readyz` fails.
#
# Everything not written below is Varnish's builtin VCL (`varnishd -x builtin`), which runs after
# each subroutine here that does not return: it already does the right thing for cms-shield's
# answers, as the comments at each step say.

vcl 4.1;

import directors;
import xkey;

# `/readyz` answers 200 once an instance serves a snapshot and 503 while it shuts down. A backend
# starts healthy (`.initial`), as compose starts Varnish after the replicas are healthy.
probe ready {
    .url = "/readyz";
    .interval = 2s;
    .timeout = 1s;
    .window = 5;
    .threshold = 3;
    .initial = 3;
}

# One backend per cms-shield instance, each named in the director below. Varnish resolves a
# backend's host once, to one address, so each replica is its own block; add one per replica
# (the tests rewrite only the hosts and ports of these blocks).
backend shield_1 {
    .host = "shield-1";
    .port = "8080";
    .probe = ready;
}

backend shield_2 {
    .host = "shield-2";
    .port = "8080";
    .probe = ready;
}

sub vcl_init {
    new shields = directors.round_robin();
    shields.add_backend(shield_1);
    shields.add_backend(shield_2);
}

# Who may purge: cms-shield instances run next to Varnish, so loopback and the private ranges
# (which include container networks). Anyone else could empty the cache at will.
acl purgers {
    "127.0.0.1";
    "::1";
    "10.0.0.0"/8;
    "172.16.0.0"/12;
    "192.168.0.0"/16;
    "fc00::"/7;
}

sub vcl_recv {
    set req.backend_hint = shields.backend();
    if (req.method == "PURGE") {
        # PURGE is not a method the builtin VCL knows (it would pipe it to cms-shield), so it ends
        # here, answered by Varnish itself.
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (req.http.xkey-purge) {
            # Hard purge: the objects are gone, the next request waits for cms-shield's answer.
            set req.http.x-purged = xkey.purge(req.http.xkey-purge);
        } elsif (req.http.xkey-softpurge) {
            # Soft purge (CDN_SOFT_PURGE): the objects expire but stay for their grace
            # (cms-shield's stale-while-revalidate), so the next request gets the old answer at
            # once while Varnish fetches the new one in the background.
            set req.http.x-purged = xkey.softpurge(req.http.xkey-softpurge);
        } else {
            # A PURGE of a URL (Wagtail's frontend cache) is meant for cms-shield itself, which
            # works out what changed; Varnish only takes purges by key.
            return (synth(400, "PURGE needs an xkey-purge or xkey-softpurge header"));
        }
        return (synth(200, "Purged"));
    }
    if (req.url ~ "^/api/" && (req.method == "GET" || req.method == "HEAD")) {
        # cms-shield's answers never depend on cookies, but a browser calling the API from the
        # site's own domain sends the site's cookies, and the builtin VCL passes every request
        # with a Cookie. Without it those requests are cached like everyone else's.
        unset req.http.Cookie;
    }
    # Otherwise builtin: GET and HEAD are looked up (keyed by URL and Host, split further by the
    # `Vary: Accept` cms-shield sends, as Wagtail does); OPTIONS, POST (the refresh webhook) and
    # requests with Authorization go straight to cms-shield.
}

sub vcl_backend_response {
    # xkey indexes an object by the space-separated keys in its `xkey` header; cms-shield names
    # them `Surrogate-Key`, the header Fastly reads, in the same form.
    if (beresp.http.Surrogate-Key) {
        set beresp.http.xkey = beresp.http.Surrogate-Key;
    }
    if (!beresp.http.Cache-Control && !beresp.http.Expires) {
        # cms-shield says how long every answer it may purge can be kept, a 404 for an absent id
        # or path included (CACHE_NEGATIVE_TTL, with the key the page's creation purges); what it
        # sends without `Cache-Control` (errors) carries no key either, so no purge could reach
        # it. The builtin VCL would keep such an answer for default_ttl (2 min). Remembered as
        # uncacheable instead, so those requests go straight to cms-shield.
        call vcl_beresp_hitmiss;
    }
    # Otherwise builtin: the TTL comes from `Cache-Control`, where `s-maxage` (CDN_MAX_AGE) wins
    # over the browsers' `max-age` (CLIENT_MAX_AGE), and the grace from `stale-while-revalidate`;
    # an `Age` from cms-shield's read-through cache is subtracted. Answers with `Set-Cookie`,
    # `private`, `no-store` or `Vary: *` are not cached (cms-shield sends none of them). A 304 to
    # Varnish's own revalidation (`If-None-Match` with the cached ETag) refreshes the stored
    # object. Server errors are never cached.
}

sub vcl_deliver {
    # Whether Varnish answered from its cache: read by the tests and handy with curl. A request
    # that joined another's fetch or a soft-purged object served in grace also counts as a hit.
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
    # The index xkey keeps is no business of the client; `Surrogate-Key` stays for a CDN further out.
    unset resp.http.xkey;
    # Otherwise builtin: Varnish answers a client's conditional GET (If-None-Match with the
    # cached ETag) with a 304 itself.
}

sub vcl_synth {
    if (req.method == "PURGE") {
        # A small plain answer for the purger's log instead of the builtin HTML error page.
        set resp.http.Content-Type = "text/plain; charset=utf-8";
        if (resp.status == 200) {
            set resp.http.X-Purged = req.http.x-purged;
            set resp.body = "purged " + req.http.x-purged + {"
"};
        } else {
            set resp.body = resp.reason + {"
"};
        }
        return (deliver);
    }
}
