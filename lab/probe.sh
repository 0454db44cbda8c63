#!/usr/bin/env bash
# probe.sh PORT [API_PREFIX] > transcript : raw request/response transcripts against a seeded lab instance.
# Page ids are those the seed produces on an empty database (see FACTS.md "Seeded tree").
P=$1; A=${2:-/api/v2}; M="localhost:$P"; PH="partner.localhost:$P"
req() { # req METHOD HOST PATH [extra curl args...]
  local m=$1 h=$2 u=$3; shift 3
  printf '\n########## %s %s%s\n# Host: %s %s\n' "$m" "$A" "$u" "$h" "$*"
  case $m in
    HEAD) curl -sS -I -H "Host: $h" "$@" "http://127.0.0.1:$P$A$u" ;;
    *) curl -sS -i -X "$m" -H "Host: $h" "$@" "http://127.0.0.1:$P$A$u" ;;
  esac
}
echo "# $(date -u +%FT%TZ) port $P prefix $A"
echo; echo "==================== 1. site selection by Host"
for h in "$M" "$PH" "partner.localhost" "unknown.example" "127.0.0.1:$P" "localhost"; do
  req GET "$h" "/pages/?fields=-title&limit=5"
  for id in 3 8 26 28; do req GET "$h" "/pages/$id/"; done
  for p in / /about/ /news/partner-launch/; do req GET "$h" "/pages/find/?html_path=$p"; done
done
for h in "partner.localhost:9999" "localhost:9999"; do req GET "$h" "/pages/?fields=-title&limit=2"; req GET "$h" "/pages/28/"; done
req GET "$M" "/pages/find/?id=28"
req GET "$M" "/pages/find/?id=abc"
req GET "$M" "/pages/find/?html_path=/about/&fields=title&id=7"
req GET "$M" "/pages/find/?id=7&fields=title,intro"
req GET "$PH" "/pages/find/?id=8"
req GET "$M" "/"
echo; echo "==================== 2. ?site="
for s in localhost partner.localhost "partner.localhost:$P" "localhost:$P" localhost:9999 unknown "" "a:b:c" "localhost:abc" ":$P"; do
  req GET "$M" "/pages/?site=$s&fields=-title&limit=3"
  req GET "$M" "/pages/8/?site=$s"
  req GET "$M" "/pages/28/?site=$s"
  req GET "$M" "/pages/find/?html_path=/about/&site=$s"
  req GET "$M" "/pages/find/?id=28&site=$s"
done
req GET "unknown.example" "/pages/?site=partner.localhost&fields=-title&limit=3"
echo; echo "==================== 3. translations"
for q in "locale=de" "locale=en" "locale=xx" "locale=" "locale=DE" "translation_of=3" "translation_of=8" "translation_of=40" "translation_of=root" \
         "translation_of=abc" "translation_of=999999" "translation_of=" "translation_of=3&locale=de" "translation_of=8&locale=en" \
         "translation_of=8&type=home.BlogPage" "translation_of=8&type=home.StandardPage" "child_of=7&locale=de" "child_of=43" "child_of=43&locale=en" \
         "descendant_of=3&locale=de" "descendant_of=39" "type=home.BlogPage&locale=de" "child_of=root&locale=de" "child_of=root" \
         "descendant_of=root&locale=de&limit=20" "translation_of=26" "locale=de&site=partner.localhost"; do
  req GET "$M" "/pages/?$q&fields=-title"
done
req GET "$PH" "/pages/?locale=de&fields=-title"
req GET "$M" "/pages/44/"
req GET "$M" "/pages/44/?fields=*"
req GET "$M" "/pages/?fields=-title&limit=20&offset=20"
echo; echo "==================== 4. find html_path with i18n"
for h in "$M" "$PH"; do
  for p in / /de/ /en/ /de/about/ /en/about/ /about/ /de/blog/alpha-post/ /home-de/about/ /de/news/partner-launch/ /news/partner-launch/; do
    req GET "$h" "/pages/find/?html_path=$p"
  done
done
req GET "$M" "/pages/find/?html_path=/about/" -H "Accept-Language: de"
req GET "$M" "/pages/find/?html_path=/de/about/" -H "Accept-Language: de"
req GET "$M" "/pages/?fields=-title&limit=2" -H "Accept-Language: de"
req GET "$M" "/pages/find/?html_path=/about/&locale=de"
echo; echo "==================== 5. images and documents"
for e in images documents; do
  for q in "" "?fields=*" "?search=red" "?search=report" "?tags=red" "?tags=text,report" "?order=title" "?order=-created_at" "?order=random" \
           "?fields=foo" "?fields=-foo" "?limit=abc" "?limit=100" "?offset=-1" "?foo=bar" "?title=readme" "?title=Red%20square" "?type=x"; do
    req GET "$M" "/$e/$q"
  done
  req GET "$M" "/$e/1/"
  req GET "$M" "/$e/1/?fields=*"
  req GET "$M" "/$e/1/?fields=_,title"
  req GET "$M" "/$e/999/"
  req GET "$M" "/$e/abc/"
  req GET "$M" "/$e/find/?id=1"
  req GET "$M" "/$e/find/?id=999"
  req GET "$M" "/$e/find/"
  req GET "$PH" "/$e/"
  req GET "unknown.example" "/$e/1/"
  req GET "$M" "/$e/?site=partner.localhost"
  req HEAD "$M" "/$e/"
  req OPTIONS "$M" "/$e/"
  req POST "$M" "/$e/"
done
req HEAD "$M" "/pages/"
req OPTIONS "$M" "/pages/"
req OPTIONS "$M" "/pages/3/"
req POST "$M" "/pages/"
req GET "$M" "/pages/" -H "Accept: text/html"
req GET "$M" "/pages/?format=json&limit=1"
echo; echo "==================== 6. limit"
for q in "limit=20" "limit=21" "limit=0" "limit=-1" "limit=abc" "offset=abc" "offset=-1" "offset=1000" "limit=1&offset=36"; do
  req GET "$M" "/pages/?$q&fields=-title"
done
echo; echo "==================== 7. text ordering"
for o in title slug -title; do for off in 0 20; do
  req GET "$M" "/pages/?order=$o&fields=-title,title&limit=20&offset=$off"
done; done
req GET "$M" "/pages/?order=title&type=home.BlogPage&fields=-title,title&limit=20"
req GET "$PH" "/pages/?order=title&fields=-title,title&limit=20"
req GET "$M" "/pages/?order=-first_published_at&fields=-title,title&limit=20"
req GET "$M" "/pages/?order=first_published_at&fields=-title,title&limit=20"
req GET "$M" "/pages/?order=date&type=home.BlogPage&fields=-title,title,date&limit=20"
req GET "$M" "/pages/?order=random&fields=-title&limit=2"
req GET "$M" "/pages/?order=random&offset=1"
req GET "$M" "/pages/?order=foo"
req GET "$M" "/pages/?order=title,slug&fields=-title,title&limit=20"
req GET "$M" "/pages/?order=-title,-id&fields=-title,title&limit=5"
req GET "$M" "/pages/?order=random,title"
req GET "$M" "/pages/?title=Team&fields=-title,title"
req GET "$M" "/pages/?slug=a%00b"
req GET "$M" "/pages/?search=apple&fields=-title,title"
req GET "$M" "/pages/?search=apple&order=title&fields=-title,title"
req GET "$M" "/pages/?show_in_menus=true&fields=-title,title"
req GET "$M" "/pages/?show_in_menus=yes"
req GET "$M" "/pages/?type=home.Nope"
req GET "$M" "/pages/?type=wagtailimages.Image"
req GET "$M" "/pages/?type=home.BlogPage&order=date&fields=-title,date"
req GET "$M" "/pages/?child_of=abc"
req GET "$M" "/pages/?child_of=999999"
req GET "$M" "/pages/?descendant_of=28"
req GET "$M" "/pages/?child_of=3&descendant_of=3"
req GET "$M" "/pages/25/"
req GET "$M" "/pages/19/"
