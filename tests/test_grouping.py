import numpy as np

from templater.grouping import (assign_groups, cluster_layouts, host_of, layout_similarity, match_prefix,
                                url_prefixes)


def test_prefixes_run_from_longest_to_host():
    assert url_prefixes("https://www.Example.com/news/world/story.html") == [
        "example.com/news/world/", "example.com/news/", "example.com/"]
    # a numeric segment (a date, an id) is not a section: the prefix stops before it
    assert url_prefixes("https://blogs.example.com/2012/11/05/post/") == ["blogs.example.com/"]
    assert url_prefixes("https://example.com/news/2017/04/story.html") == ["example.com/news/", "example.com/"]
    assert url_prefixes("http://example.org") == ["example.org/"]
    assert url_prefixes("not a url") == []
    assert host_of("https://user@Host.example:8080/x") == "host.example"


def test_small_groups_back_off_to_shorter_prefixes():
    urls = [f"http://a.com/x/{i}.html" for i in range(3)] + ["http://a.com/y/1", "http://a.com/z/q/1", "bad"]
    assert assign_groups(urls, min_pages=3) == ["a.com/x/"] * 3 + ["a.com/", "a.com/", ""]


def test_match_prefix_takes_the_longest_known():
    assert match_prefix("http://a.com/x/y/p.html", {"a.com/", "a.com/x/"}) == "a.com/x/"
    assert match_prefix("http://b.com/p", {"a.com/"}) is None


def test_layouts_split_pages_that_share_no_structure():
    one = [np.array([1, 2, 3, 4, 5], dtype=np.uint32), np.array([1, 2, 3, 4, 6], dtype=np.uint32),
           np.array([1, 2, 3, 5, 6], dtype=np.uint32)]
    two = [np.array([10, 11, 12, 13], dtype=np.uint32), np.array([10, 11, 12, 14], dtype=np.uint32)]
    labels = cluster_layouts(one + two, threshold=0.3)
    assert labels[:3] == [0, 0, 0]
    assert labels[3:] == [1, 1]
    # order of input does not change the partition
    flipped = cluster_layouts(two + one, threshold=0.3)
    assert flipped[:2] == [1, 1] and flipped[2:] == [0, 0, 0]


def test_layout_similarity_is_jaccard():
    a = np.array([1, 2, 3], dtype=np.uint32)
    b = np.array([2, 3, 4], dtype=np.uint32)
    assert layout_similarity(a, b) == 0.5
    assert layout_similarity(a, a) == 1.0
