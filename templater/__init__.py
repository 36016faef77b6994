"""templater: learn each site's template from its own pages, extract main content, find near-duplicates."""

__version__ = "0.1.0"
DISTRIBUTION = "site-templater"  # the name on the package index ("templater" there is another project)
